/** Writing a response body at the pace the client reads it. */
import type http from 'node:http';

/** Resolves when the response drains or closes, whichever comes first; leaves no listener behind. */
function drainedOrClosed(res: http.ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/**
 * Writes chunks as the client takes them: after a write the socket refuses, waits for 'drain'.
 * A client that stops reading leaves the server waiting, one socket buffer ahead; one that
 * disconnects ends the loop. Headers must already be set.
 */
export async function streamBody(res: http.ServerResponse, signal: AbortSignal, chunks: Iterable<Buffer>): Promise<void> {
  for (const chunk of chunks) {
    if (res.destroyed || signal.aborted) return;
    if (!res.write(chunk)) await drainedOrClosed(res);
  }
  if (!res.destroyed && !signal.aborted) res.end();
}

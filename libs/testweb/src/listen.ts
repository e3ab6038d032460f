/** Binding one http.Server per loopback address, all on one port. */
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describeError } from '@trawl/core';
import { TestWebError, TestWebErrorCode } from './errors.js';

function listen(server: http.Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error): void => {
      server.off('listening', onListening);
      reject(error);
    };
    const onListening = (): void => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen({ host, port });
  });
}

/** Closes listeners and destroys every open connection, idle keep-alive ones included. */
export async function closeServers(servers: readonly http.Server[]): Promise<void> {
  await Promise.all(
    servers.map(
      (server) =>
        new Promise<void>((resolve) => {
          if (!server.listening) {
            server.closeAllConnections();
            resolve();
            return;
          }
          server.close(() => resolve());
          server.closeAllConnections();
        }),
    ),
  );
}

/**
 * Listens on every address with one port. With `port` 0 the first address picks a free port and
 * the others reuse it; if a later address has that port taken, everything is closed and tried
 * again with a new port, up to `attempts` times. With a fixed port there is one attempt.
 */
export async function listenAll(
  addresses: readonly string[],
  createServer: (index: number) => http.Server,
  port: number,
  attempts: number,
): Promise<{ servers: http.Server[]; port: number }> {
  let lastError: unknown;
  for (let attempt = 0; attempt < (port === 0 ? attempts : 1); attempt++) {
    const servers = addresses.map((_, index) => createServer(index));
    try {
      const chosen = await listen(servers[0] as http.Server, addresses[0] as string, port);
      const results = await Promise.allSettled(
        servers.slice(1).map((server, i) => listen(server, addresses[i + 1] as string, chosen)),
      );
      const failure = results.find((result) => result.status === 'rejected');
      if (failure !== undefined) throw (failure as PromiseRejectedResult).reason;
      return { servers, port: chosen };
    } catch (error) {
      lastError = error;
      await closeServers(servers);
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') break;
    }
  }
  throw new TestWebError(
    TestWebErrorCode.Bind,
    `could not listen on ${addresses.length} addresses from ${addresses[0]}: ${describeError(lastError)}`,
    lastError,
  );
}

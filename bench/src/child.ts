import type { ChildProcess } from 'node:child_process';

/** The next IPC message from a forked helper that carries `field`; rejects if the helper exits first. */
export function replyFrom<T>(child: ChildProcess, field: string, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: Record<string, unknown>) => {
      if (!(field in message)) return;
      child.off('message', onMessage);
      resolve(message as T);
    };
    child.on('message', onMessage);
    child.once('exit', (code) => reject(new Error(`${what} exited ${code}`)));
  });
}

import { type ChildProcess, spawn, type SpawnOptions } from 'node:child_process';

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

/**
 * Runs `command` to its end, collecting its output; rejects with the last of its stderr when it
 * exits other than 0 (`what` names it in the error).
 */
export async function runToEnd(command: string, args: readonly string[], options: SpawnOptions, what: string): Promise<{ stdout: string; stderr: string }> {
  const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`${what} exited ${code}: ${stderr.slice(-2000)}`);
  return { stdout, stderr };
}

import { type ChildProcess, spawn, spawnSync } from 'node:child_process';

/**
 * How a server child is made to die with this process:
 *   setpriv   util-linux `setpriv --pdeathsig TERM` sets PR_SET_PDEATHSIG before it execs the
 *             server, so the kernel signals the server the moment this process dies, however
 *             it dies (SIGKILL and the OOM killer included: no exit handler runs then)
 *   watchdog  a tiny shell loop beside the server polls this process and stops the server once
 *             this process is gone (where setpriv is missing: macOS, minimal images)
 *   auto      setpriv when it works here, else the watchdog
 * The signal is SIGTERM, not SIGKILL: redis-server then shuts down cleanly, flushing its AOF.
 */
export type ParentDeathMethod = 'auto' | 'setpriv' | 'watchdog';

let setprivWorks: boolean | undefined;
function hasSetpriv(): boolean {
  setprivWorks ??= spawnSync('setpriv', ['--pdeathsig', 'TERM', '--', 'true'], { stdio: 'ignore' }).status === 0;
  return setprivWorks;
}

// $1 parent pid, $2 server pid. Ends when either is gone; stops the server only if the parent
// went first (a server that exited on its own may have had its pid reused). SIGKILL follows
// 10 s later if the server ignores SIGTERM.
const WATCHDOG = `
while kill -0 "$1" 2>/dev/null && kill -0 "$2" 2>/dev/null; do sleep 0.2; done
kill -0 "$1" 2>/dev/null && exit 0
kill -TERM "$2" 2>/dev/null || exit 0
i=0; while kill -0 "$2" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.2; i=$((i + 1)); done
kill -KILL "$2" 2>/dev/null; exit 0`;

/** Spawns `binary args` (stdio ignored) so that it dies with this process. */
export function spawnTiedToParent(binary: string, args: readonly string[], method: ParentDeathMethod = 'auto'): { child: ChildProcess; method: 'setpriv' | 'watchdog' } {
  const useSetpriv = method === 'setpriv' || (method === 'auto' && hasSetpriv());
  if (useSetpriv) {
    return { child: spawn('setpriv', ['--pdeathsig', 'TERM', '--', binary, ...args], { stdio: 'ignore' }), method: 'setpriv' };
  }
  const child = spawn(binary, args, { stdio: 'ignore' });
  if (child.pid !== undefined) {
    spawn('sh', ['-c', WATCHDOG, 'trawl-watchdog', String(process.pid), String(child.pid)], { stdio: 'ignore' }).unref();
  }
  return { child, method: 'watchdog' };
}

import { readFileSync } from 'node:fs';

/**
 * The process runs: it exists and is not a zombie. A killed process stays in the process table
 * as a zombie until its parent (or init, for an orphan) reaps it, which can take a while; a
 * zombie holds no port, file or lock, so it counts as gone. EPERM means it exists under another
 * user. Without /proc (macOS) existing counts as running.
 */
export function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) state …": comm may itself hold parentheses.
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return true;
  }
}

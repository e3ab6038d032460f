import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import type { PrivatePostgres, PrivateRedis } from '@trawl/cli/testing';

/** Clock ticks per second of /proc/<pid>/stat's times (USER_HZ). */
const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** A process's own CPU and that of its reaped children, in clock ticks, and its parent; null once it is gone. */
function procStat(pid: number): { ppid: number; self: number; children: number } | null {
  try {
    const raw = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces), from field 3 (state) on:
    // state ppid … utime(14) stime cutime cstime.
    const fields = raw.slice(raw.lastIndexOf(')') + 2).split(' ').map(Number);
    const at = (n: number) => fields[n - 3] as number;
    return { ppid: at(4), self: at(14) + at(15), children: at(16) + at(17) };
  } catch {
    return null;
  }
}

/** Redis's CPU so far (`INFO cpu`: user + system, all its threads), in ms. */
export function redisCpuMs(redis: PrivateRedis): number {
  const text = redis.cli('INFO', 'cpu');
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(text)?.[1] ?? 0);
  return (field('used_cpu_user') + field('used_cpu_sys')) * 1000;
}

/**
 * CPU ms a PostgreSQL cluster has used so far: the postmaster's own and its reaped children's
 * (backends that exited), plus every live child's own. A backend that exits between two readings
 * moves its time from the second sum to the first once the postmaster reaps it: the total stays
 * whole (read it a moment after a crawl's connections close).
 */
export function postgresCpuMs(postgres: PrivatePostgres): number {
  const postmaster = postgres.postmasterPid();
  if (!postmaster) throw new Error('no PostgreSQL postmaster');
  const main = procStat(postmaster);
  if (!main) throw new Error('PostgreSQL postmaster not found in /proc');
  let ticks = main.self + main.children;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = procStat(Number(entry));
    if (stat && stat.ppid === postmaster) ticks += stat.self;
  }
  return (ticks * 1000) / CLOCK_TICKS;
}

/** The machine's CPU time so far, all cores, in clock ticks: busy (not idle, not waiting on I/O) and in all (`/proc/stat`). */
export function machineTicks(): { busy: number; total: number } {
  const fields = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1, 9).map(Number);
  const total = fields.reduce((sum, n) => sum + n, 0);
  // user nice system idle iowait irq softirq steal
  return { busy: total - (fields[3] ?? 0) - (fields[4] ?? 0), total };
}

/** CPU ms a live process has used so far (all its threads), or 0 once it is gone. */
export function processCpuMs(pid: number): number {
  const stat = procStat(pid);
  return stat ? (stat.self * 1000) / CLOCK_TICKS : 0;
}

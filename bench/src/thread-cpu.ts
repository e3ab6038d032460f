import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** One OS thread of a process and the CPU it had used (user + system) when last seen. */
export interface ThreadCpu {
  tid: number;
  name: string;
  cpuMs: number;
}

/** Clock ticks per second of /proc's CPU times (USER_HZ; 100 on every Linux build in use). */
function ticksPerSecond(): number {
  const answer = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout);
  return Number.isFinite(answer) && answer > 0 ? answer : 100;
}

/**
 * Watches a process's threads from outside (Linux: /proc/<pid>/task/<tid>/stat and comm), every
 * `everyMs`, keeping each thread's last figures: a thread that ends (at the latest when the
 * process exits) keeps what it had used up to the last look, so up to `everyMs` of its CPU is
 * missed. trawl names its own threads (trawl-process, trawl-analysis, trawl-store); the main
 * thread's id is the process's; the others are V8's (garbage collection, compilation) and
 * libuv's (file system, DNS), which keep the process's name.
 */
export class ThreadCpuSampler {
  private readonly seen = new Map<number, ThreadCpu>();
  private readonly msPerTick = 1000 / ticksPerSecond();
  private readonly timer: NodeJS.Timeout;

  constructor(
    readonly pid: number,
    everyMs = 100,
  ) {
    this.look();
    this.timer = setInterval(() => this.look(), everyMs);
  }

  /** Stops looking; every thread seen, with its last figures. */
  stop(): ThreadCpu[] {
    clearInterval(this.timer);
    return [...this.seen.values()];
  }

  private look(): void {
    let tids: string[];
    try {
      tids = readdirSync(`/proc/${this.pid}/task`);
    } catch {
      return; // Not started yet, or gone.
    }
    for (const tid of tids) {
      try {
        const stat = readFileSync(`/proc/${this.pid}/task/${tid}/stat`, 'utf8');
        const name = readFileSync(`/proc/${this.pid}/task/${tid}/comm`, 'utf8').trim();
        // Fields after the name in parentheses: state is the first, utime the 12th, stime the 13th.
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        const ticks = Number(fields[11]) + Number(fields[12]);
        this.seen.set(Number(tid), { tid: Number(tid), name, cpuMs: ticks * this.msPerTick });
      } catch {
        // The thread ended between the listing and the read: its last figures stand.
      }
    }
  }
}

/** What each kind of thread is, for a report. */
const KINDS: [test: (t: ThreadCpu, pid: number) => boolean, label: string][] = [
  [(t, pid) => t.tid === pid, 'main thread (fetch stage and dispatch: gate, HTTP, BullMQ jobs, hand-off)'],
  [(t) => t.name === 'trawl-process', 'trawl-process (process stage: discovery, records, duplicates)'],
  [(t) => t.name === 'trawl-analysis', 'trawl-analysis (decode, parse, text, SimHash)'],
  [(t) => t.name === 'trawl-store', 'trawl-store (compress and write bodies)'],
  [() => true, 'other threads (V8: garbage collection, compilation; libuv: files, DNS)'],
];

/** The threads' CPU by kind: label, threads, CPU ms — in the order of KINDS, empty kinds left out. */
export function cpuByThreadKind(pid: number, threads: readonly ThreadCpu[]): [label: string, threads: number, cpuMs: number][] {
  const rows = KINDS.map(([, label]) => [label, 0, 0] as [string, number, number]);
  for (const thread of threads) {
    const row = rows[KINDS.findIndex(([test]) => test(thread, pid))] as [string, number, number];
    row[1] += 1;
    row[2] += thread.cpuMs;
  }
  return rows.filter(([, n]) => n > 0);
}

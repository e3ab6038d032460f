import { type Clock, sleep } from '@trawl/core';
import type { Frontier, Lease } from '@trawl/frontier';
import type { FetchJobData, FetchQueues } from '@trawl/queue';
import type { Logger } from '@trawl/telemetry';
import type { Discovery } from './discovery.js';
import type { PolicyFollower } from './policy.js';

export interface DispatcherDeps {
  frontier: Frontier;
  queues: FetchQueues;
  discovery: Discovery;
  policy: PolicyFollower;
  clock: Clock;
  logger: Logger;
}

export interface DispatcherOptions {
  /** Jobs waiting in a partition's queue at most (backpressure). */
  window: number;
  /** Longest sleep between claims when nothing is due sooner. */
  pollMs: number;
  /** Claim hosts this long before they come due (their jobs wait at the gate). */
  leadMs: number;
  /** How often to look for URLs a crash left inserted but unqueued, and how old they must be. */
  repairEveryMs: number;
  repairOlderThanMs: number;
}

export const jobDataOf = (lease: Lease): FetchJobData => ({
  u: lease.url,
  h: lease.host,
  p: lease.partition,
  d: lease.depth,
  x: lease.hops,
  f: lease.flags,
  b: lease.band,
  l: lease.id,
  t: Math.round(lease.dueAt),
});

/**
 * Moves politeness-cleared URLs from the frontier into the partitions' fetch queues, keeping
 * each queue no deeper than the window, and sleeping exactly until the next host is due. Many
 * dispatchers may run at once (claims are atomic); each partition has its own loop.
 */
export class Dispatcher {
  private readonly controller = new AbortController();
  private loops: Promise<void>[] = [];
  private lastRepair = 0;

  constructor(
    private readonly deps: DispatcherDeps,
    private readonly options: DispatcherOptions,
  ) {}

  start(): void {
    for (let p = 0; p < this.deps.frontier.partitions; p += 1) this.loops.push(this.loop(p));
  }

  async stop(): Promise<void> {
    this.controller.abort();
    await Promise.all(this.loops);
    this.loops = [];
  }

  /** One dispatch step for a partition; returns how long to sleep before the next. */
  async tick(partition: number): Promise<number> {
    const { frontier, queues, clock } = this.deps;
    const resolved = await this.deps.policy.get();
    if (!resolved) return this.options.pollMs;
    let room = this.options.window - (await queues.waiting(partition));
    const maxPages = resolved.policy.maxPages;
    if (maxPages !== null && room > 0) {
      const stats = await frontier.stats();
      room = Math.min(room, maxPages - (stats.done - resolved.policy.pagesBaseline) - stats.leased);
    }
    const claim = await frontier.claim(partition, Math.max(0, room), { leadMs: this.options.leadMs });
    if (claim.expired > 0) this.deps.logger.warn({ partition, expired: claim.expired }, 'returned expired leases to the frontier');
    if (claim.leases.length > 0) await queues.addLeased(partition, claim.leases.map(jobDataOf));
    if (room > 0 && claim.leases.length === room) return 0; // more may be due right now
    if (claim.nextDueAt === null) return this.options.pollMs;
    // Wake when the next host enters the lead window, but not more often than every third of
    // it: hosts coming due in between are claimed together, one round trip for several jobs,
    // and still reach their workers before they are due.
    const untilNext = claim.nextDueAt - this.options.leadMs - clock.now();
    return Math.max(Math.floor(this.options.leadMs / 3), Math.min(this.options.pollMs, untilNext));
  }

  private async loop(partition: number): Promise<void> {
    const signal = this.controller.signal;
    while (!signal.aborted) {
      let wait = this.options.pollMs;
      try {
        wait = await this.tick(partition);
        if (partition === 0) await this.maybeRepair();
      } catch (error) {
        this.deps.logger.error({ err: error, partition }, 'dispatch step failed');
        wait = Math.max(wait, 1000);
      }
      await sleep(wait, signal);
    }
  }

  private async maybeRepair(): Promise<void> {
    const now = this.deps.clock.now();
    if (now - this.lastRepair < this.options.repairEveryMs) return;
    this.lastRepair = now;
    await this.deps.discovery.repair(this.options.repairOlderThanMs);
  }
}

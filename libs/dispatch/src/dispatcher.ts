import { type Clock, sleep } from '@trawl/core';
import type { Frontier, Lease } from '@trawl/frontier';
import type { FetchJob, FetchQueues } from '@trawl/queue';
import type { Logger } from '@trawl/telemetry';
import type { PolicyFollower } from '@trawl/model';

/** How often a partition's dispatcher looks for orphaned leases while it may still find some. */
const RECLAIM_EVERY_MS = 500;

export interface DispatcherDeps {
  frontier: Pick<Frontier, 'claim' | 'stats' | 'partitions' | 'leasesExpiringBy' | 'requeue' | 'options' | 'processDepth'>;
  queues: Pick<FetchQueues, 'waiting' | 'addLeased' | 'jobsExist'>;
  policy: Pick<PolicyFollower, 'get'>;
  clock: Clock;
  logger: Logger;
  /**
   * With TRAWL_FRONTIER_REDIS_MAX_URLS: one refill round of a partition (`FrontierRefill.run`),
   * run before each claim, at most every `refillEveryMs`, so hosts are topped up from PostgreSQL
   * ahead of need. Absent: nothing spills, nothing to refill.
   */
  refill?: (partition: number) => Promise<number>;
}

export interface DispatcherOptions {
  /** Jobs waiting in a partition's queue at most (backpressure). */
  window: number;
  /** Longest sleep between claims when nothing is due sooner. */
  pollMs: number;
  /**
   * How long a read of a queue's depth is trusted (default 1000 ms): until then the dispatcher
   * counts the jobs it added since on top of it (see `roomIn`).
   */
  depthTtlMs?: number;
  /** Claim hosts this long before they come due (their jobs wait at the gate). */
  leadMs: number;
  /**
   * A lease claimed at least this long ago whose fetch job does not exist was orphaned by a
   * dispatcher that died (or failed) between the claim and adding the jobs (default 2000).
   */
  orphanAgeMs?: number;
  /**
   * Backpressure from the process stage (TRAWL_PROCESS_BACKLOG_MAX): with this many of a
   * partition's pages waiting to be processed, nothing more of it is claimed; below, the window
   * shrinks in proportion to the backlog. Absent: the backlog is not looked at.
   */
  backlogMax?: number;
  /** Refill rounds of a partition at most this often (default 100 ms). */
  refillEveryMs?: number;
  /** Leases the orphan sweep reads per round trip (default 1000); it reads them all, page by page. */
  orphanPageSize?: number;
}

/** Lease ids the dispatcher issues: `p<partition>-<sequence>`, also the fetch job's id. */
const DISPATCHED_LEASE = /^p\d+-\d+$/;

export const fetchJobOf = (lease: Lease): FetchJob => ({
  url: lease.url,
  host: lease.host,
  partition: lease.partition,
  depth: lease.depth,
  maxDepth: lease.maxDepth ?? null,
  hops: lease.hops,
  flags: lease.flags,
  band: lease.band,
  leaseId: lease.id,
  hostDueAt: lease.dueAt,
});

/**
 * Moves politeness-cleared URLs from the frontier into the partitions' fetch queues, keeping
 * each queue no deeper than the window, and sleeping exactly until the next host is due. Each
 * partition has its own loop, started and stopped as this process gains and loses the
 * partition (see `Scheduler`); claims are atomic, so even two dispatchers of one partition would
 * never hand out a URL twice — ownership only keeps them from wasting work.
 */
export class Dispatcher {
  private readonly loops = new Map<number, { controller: AbortController; done: Promise<void> }>();
  /**
   * Per partition: the fetch queue's depth and the process stage's backlog as last read, when,
   * and the jobs this dispatcher added since.
   */
  private readonly depth = new Map<number, { waiting: number; backlog: number; at: number; added: number }>();
  /** Per partition: when its last refill round began. */
  private readonly refilledAt = new Map<number, number>();

  constructor(
    private readonly deps: DispatcherDeps,
    private readonly options: DispatcherOptions,
  ) {}

  /** Starts every partition's loop (a single dispatcher owning the whole crawl). */
  start(): void {
    for (let p = 0; p < this.deps.frontier.partitions; p += 1) this.startPartition(p);
  }

  startPartition(partition: number): void {
    if (this.loops.has(partition)) return;
    const controller = new AbortController();
    this.depth.delete(partition);
    this.loops.set(partition, { controller, done: this.loop(partition, controller.signal) });
  }

  /**
   * Gives back, at once, leases of the partition that have no fetch job: a dispatcher that died
   * between claiming URLs and adding their jobs (or whose add failed) leaves leases that nobody
   * will run, which would otherwise hold their URLs (and hosts) for a whole TRAWL_LEASE_MS. Only
   * leases claimed at least `orphanAgeMs` ago are looked at, so a live dispatcher's claim in
   * flight is left alone; should an old dispatcher add the job after all, the gate finds the
   * lease tombstoned and drops the job. A lease whose URL was fetched never goes back, whether or
   * not its finished job is still in the queue's history (`Frontier.requeue`). Every old enough
   * lease is looked at, a page at a time: a big crawl's queue window and deferred jobs can hold
   * thousands, all older than the orphans behind them. Returns how many were requeued.
   */
  async reclaimOrphans(partition: number): Promise<number> {
    const { frontier, queues, clock } = this.deps;
    const ageMs = this.options.orphanAgeMs ?? 2000;
    const pageSize = this.options.orphanPageSize ?? 1000;
    const maxExpiry = clock.now() + frontier.options.leaseMs - ageMs;
    let requeued = 0;
    for (let offset = 0; ; ) {
      const page = await frontier.leasesExpiringBy(partition, maxExpiry, pageSize, offset);
      const candidates = page.filter((id) => DISPATCHED_LEASE.test(id));
      const exists = await queues.jobsExist(partition, candidates);
      const given = await frontier.requeue(partition, candidates.filter((_, i) => !exists[i]));
      requeued += given;
      if (page.length < pageSize) break;
      // The leases given back have left the set: the next page starts that many places sooner.
      offset += page.length - given;
    }
    if (requeued > 0) this.deps.logger.warn({ partition, requeued }, 'gave back leases whose fetch jobs were never added (a dispatcher died between claim and add)');
    return requeued;
  }

  async stopPartition(partition: number): Promise<void> {
    const loop = this.loops.get(partition);
    if (!loop) return;
    this.loops.delete(partition);
    loop.controller.abort();
    await loop.done;
  }

  /** The partitions this dispatcher is running. */
  get running(): number[] {
    return [...this.loops.keys()].sort((a, b) => a - b);
  }

  async stop(): Promise<void> {
    await Promise.all([...this.loops.keys()].map((p) => this.stopPartition(p)));
  }

  /** One dispatch step for a partition; returns how long to sleep before the next. */
  async tick(partition: number): Promise<number> {
    const { frontier, queues, clock } = this.deps;
    const resolved = await this.deps.policy.get();
    if (!resolved) return this.options.pollMs;
    await this.refill(partition);
    let room = await this.roomIn(partition);
    const maxPages = resolved.policy.maxPages;
    if (maxPages !== null && room > 0) {
      const stats = await frontier.stats();
      room = Math.min(room, maxPages - (stats.done - resolved.policy.pagesBaseline) - stats.leased);
    }
    // A partition whose Redis data was lost is never claimed from: claimReady checks its live
    // mark atomically (the scheduler's guard stops the loops soon after).
    const claim = await frontier.claim(partition, Math.max(0, room), { leadMs: this.options.leadMs });
    if (claim.expired > 0) this.deps.logger.warn({ partition, expired: claim.expired }, 'returned expired leases to the frontier');
    if (claim.leases.length > 0) {
      await queues.addLeased(partition, claim.leases.map(fetchJobOf));
      const depth = this.depth.get(partition);
      if (depth) depth.added += claim.leases.length;
    }
    if (room > 0 && claim.leases.length === room) return 0; // more may be due right now
    if (claim.nextDueAt === null) return this.options.pollMs;
    // Wake when the next host enters the lead window, but not more often than every third of
    // it: hosts coming due in between are claimed together, one round trip for several jobs,
    // and still reach their workers before they are due.
    const untilNext = claim.nextDueAt - this.options.leadMs - clock.now();
    return Math.max(Math.floor(this.options.leadMs / 3), Math.min(this.options.pollMs, untilNext));
  }

  /**
   * Tops up hosts running low from PostgreSQL (see `DispatcherDeps.refill`). A failed round is
   * logged and left for the next: claiming goes on from what Redis holds.
   */
  private async refill(partition: number): Promise<void> {
    const { refill, clock } = this.deps;
    if (!refill) return;
    const now = clock.now();
    if (now - (this.refilledAt.get(partition) ?? -Infinity) < (this.options.refillEveryMs ?? 100)) return;
    this.refilledAt.set(partition, now);
    try {
      await refill(partition);
    } catch (error) {
      this.deps.logger.warn({ err: error, partition }, 'frontier refill failed; trying again next round');
    }
  }

  /**
   * Room left in the partition's queue under the window. Reading the queue's depth is a round
   * trip of its own, so a read is reused while it is fresh (`depthTtlMs`) and leaves room for at
   * least half the window: the jobs added since are counted on top of it. Workers only take jobs
   * out, so that bound is never below the true depth (jobs coming back from the delayed set
   * aside, as with any read) and the window holds; a claim it cuts short reads again next tick.
   * While workers keep up this reads about once a second instead of once per claim.
   */
  private async roomIn(partition: number): Promise<number> {
    const now = this.deps.clock.now();
    const known = this.depth.get(partition);
    if (known && now - known.at < (this.options.depthTtlMs ?? 1000)) {
      const window = this.windowFor(known.backlog);
      const room = window - known.waiting - known.added;
      if (room >= window / 2) return room;
    }
    const { backlogMax } = this.options;
    const [waiting, backlog] = await Promise.all([this.deps.queues.waiting(partition), backlogMax === undefined ? 0 : this.deps.frontier.processDepth(partition)]);
    this.depth.set(partition, { waiting, backlog, at: now, added: 0 });
    return this.windowFor(backlog) - waiting;
  }

  /**
   * The fetch window while `backlog` pages wait for the process stage: the whole window with
   * none, shrinking in proportion, nothing at `backlogMax`. Fetching slows before processing
   * falls hopelessly behind (memory would grow, and pages would wait long to be recorded), and
   * picks up again as the backlog drains; no host is ever fetched sooner than its due time
   * either way — this only claims less.
   */
  private windowFor(backlog: number): number {
    const { window, backlogMax } = this.options;
    if (backlogMax === undefined || backlog <= 0) return window;
    return Math.floor(window * Math.max(0, 1 - backlog / backlogMax));
  }

  private async loop(partition: number, signal: AbortSignal): Promise<void> {
    // A partition taken over (or this process restarted) may hold its predecessor's orphans; a
    // failed step may have claimed leases whose jobs were never added. Orphans younger than
    // orphanAgeMs are not looked at, and a predecessor that died just after claiming leaves
    // exactly those: so look again until that age has passed since the takeover (or the failure).
    const { clock } = this.deps;
    const ageMs = this.options.orphanAgeMs ?? 2000;
    let reclaimUntil = clock.now() + ageMs + RECLAIM_EVERY_MS;
    let lastReclaim = -Infinity;
    while (!signal.aborted) {
      let wait = this.options.pollMs;
      try {
        const now = clock.now();
        if (now <= reclaimUntil && now - lastReclaim >= RECLAIM_EVERY_MS) {
          lastReclaim = now;
          await this.reclaimOrphans(partition);
        }
        wait = await this.tick(partition);
      } catch (error) {
        this.deps.logger.error({ err: error, partition }, 'dispatch step failed');
        wait = Math.max(wait, 1000);
        reclaimUntil = clock.now() + ageMs + RECLAIM_EVERY_MS;
        lastReclaim = -Infinity;
      }
      await sleep(wait, signal);
    }
  }
}

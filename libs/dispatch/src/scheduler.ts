import { type Clock, ErrorCode } from '@trawl/core';
import type { Discovery } from '@trawl/model';
import type { Redis } from '@trawl/redis';
import type { Logger } from '@trawl/telemetry';
import type { Dispatcher } from './dispatcher.js';
import { Membership, preferredOwners, Rounds } from './membership.js';
import { PartitionOwnership } from './ownership.js';
import { rebuildStalled } from './rebuild.js';

/** A handed-back rebuild whose scan has not moved for this long died with its process: resume it. */
export const REBUILD_STALLED_MS = 10_000;

export interface SchedulerDeps {
  redis: Redis;
  namespace: string;
  partitions: number;
  dispatcher: Dispatcher;
  discovery: Pick<Discovery, 'repair'>;
  clock: Clock;
  logger: Logger;
  /**
   * Whether the crawl's Redis data is there (`Runtime.intact`). While it is not (Redis lost it),
   * nothing is dispatched or repaired, and the message — what to run — is logged once.
   */
  guard?: () => Promise<{ ok: true } | { ok: false; message: string }>;
  /** Called once the data is back (after `trawl frontier rebuild`), before dispatching resumes. */
  onRestored?: () => Promise<void>;
  /**
   * TRAWL_AUTO_REBUILD: runs the rebuild itself when the guard finds the data lost (in the
   * background: rounds go on, so this scheduler's memberships and leases stay alive meanwhile).
   * A failed rebuild is logged and tried again on a later round.
   */
  rebuild?: () => Promise<void>;
}

export interface SchedulerOptions {
  /** This process's id among the crawl's schedulers. */
  memberId: string;
  /** Ownership (and membership) lease: a dead scheduler's partitions are taken over within about this long. */
  leaseMs: number;
  /** How often to push URLs a crash left inserted but never queued, and how old they must be. */
  repairEveryMs: number;
  repairOlderThanMs: number;
}

/**
 * Runs the dispatcher for the partitions this scheduler owns, any number of schedulers sharing
 * one crawl. Each partition is dispatched by exactly one live scheduler at a time: ownership is a
 * lease in Redis, renewed every third of its TTL; partitions are spread over the live schedulers
 * on a consistent-hash ring, and a partition whose owner died is taken by another once the lease
 * runs out. The owner of partition 0 also runs the crawl-wide repair sweep. Stopping (SIGTERM)
 * hands the partitions over at once.
 */
export class Scheduler {
  private readonly ownership: PartitionOwnership;
  private readonly membership: Membership;
  /** Owned partitions and since when. */
  private readonly owned = new Map<number, number>();
  /** Partitions seen free, and since when (to take them when their preferred owner does not). */
  private readonly freeSince = new Map<number, number>();
  private readonly rounds: Rounds;
  private lastRepair = 0;
  /** The namespace's Redis data was lost: waiting for a rebuild. */
  private wiped = false;
  /** The rebuild this scheduler runs (TRAWL_AUTO_REBUILD), while it runs. */
  private rebuilding: Promise<void> | null = null;

  constructor(
    private readonly deps: SchedulerDeps,
    private readonly options: SchedulerOptions,
  ) {
    this.ownership = new PartitionOwnership(deps.redis, deps.namespace, options.memberId, options.leaseMs);
    this.membership = new Membership(deps.redis, deps.namespace, 'scheduler', options.memberId, options.leaseMs, deps.clock);
    this.rounds = new Rounds(options.leaseMs, () => this.tick(), (error) => deps.logger.error({ err: error }, 'scheduler step failed'));
  }

  get memberId(): string {
    return this.options.memberId;
  }

  /** The partitions this scheduler dispatches now. */
  get partitions(): number[] {
    return [...this.owned.keys()].sort((a, b) => a - b);
  }

  /** Joins, takes its share of the partitions, and keeps them until stopped. */
  start(): Promise<void> {
    return this.rounds.start();
  }

  async stop(): Promise<void> {
    await this.rounds.stop();
    // A rebuild under way is left to finish (it resumes where it stopped if this process dies).
    await this.rebuilding;
    await this.deps.dispatcher.stop();
    await Promise.all([...this.owned.keys()].map((p) => this.ownership.release(p).catch(() => false)));
    this.owned.clear();
    await this.membership.leave().catch(() => undefined);
    this.deps.logger.info({ member: this.memberId }, 'scheduler stopped; partitions handed over');
  }

  /** Waiting for `trawl frontier rebuild` (Redis lost the crawl's data). */
  get waitingForRebuild(): boolean {
    return this.wiped;
  }

  /**
   * False while Redis has lost the crawl (every partition's dispatch stopped, the message logged
   * once); true otherwise — after a rebuild, `onRestored` runs first and partitions are taken
   * again as usual.
   */
  private async checkIntact(): Promise<boolean> {
    const state = this.deps.guard ? await this.deps.guard() : ({ ok: true } as const);
    if (!state.ok) {
      if (!this.wiped) this.deps.logger.error({ code: ErrorCode.NamespaceWiped }, this.deps.rebuild ? `${state.message} (TRAWL_AUTO_REBUILD: rebuilding now)` : state.message);
      this.wiped = true;
      for (const p of [...this.owned.keys()]) await this.deps.dispatcher.stopPartition(p);
      this.owned.clear();
      const { rebuild } = this.deps;
      if (rebuild && this.rebuilding === null) {
        this.rebuilding = rebuild()
          .catch((error: unknown) => this.deps.logger.error({ err: error }, 'automatic rebuild failed; trying again on the next round'))
          .finally(() => {
            this.rebuilding = null;
          });
      }
      return false;
    }
    if (this.wiped) {
      this.wiped = false;
      this.deps.logger.warn('the crawl\'s Redis data is back (rebuilt): dispatching again');
      await this.deps.onRestored?.();
    }
    return true;
  }

  /** One round: heartbeat, keep or hand over owned partitions, take free ones, maintenance. */
  async tick(): Promise<void> {
    const { dispatcher, logger, clock } = this.deps;
    if (!(await this.checkIntact())) return;
    const now = clock.now();
    const live = await this.membership.heartbeat();
    const preferred = preferredOwners(live, this.deps.partitions);
    for (let p = 0; p < this.deps.partitions; p += 1) {
      const since = this.owned.get(p);
      if (since !== undefined) {
        if (!(await this.ownership.renew(p))) {
          this.owned.delete(p);
          await dispatcher.stopPartition(p);
          logger.warn({ partition: p }, 'lost ownership of a partition');
          continue;
        }
        const want = preferred[p];
        // Hand a partition to the scheduler the ring prefers once it has been up a full round.
        if (want !== undefined && want !== this.memberId && now - since > this.options.leaseMs) {
          await dispatcher.stopPartition(p);
          await this.ownership.release(p);
          this.owned.delete(p);
          logger.info({ partition: p, to: want }, 'handed a partition over');
        }
        continue;
      }
      const holder = await this.ownership.owner(p);
      if (holder !== null) {
        this.freeSince.delete(p);
        continue;
      }
      const freeSince = this.freeSince.get(p) ?? now;
      this.freeSince.set(p, freeSince);
      // The preferred scheduler takes a free partition at once; any other after one more round,
      // so a partition never waits on a member that is not taking it.
      const mine = preferred[p] === this.memberId || now - freeSince >= Math.floor(this.options.leaseMs / 3);
      if (mine && (await this.ownership.acquire(p))) {
        this.owned.set(p, now);
        this.freeSince.delete(p);
        dispatcher.startPartition(p);
        logger.info({ partition: p }, 'took ownership of a partition');
      }
    }
    if (this.owned.has(0) && now - this.lastRepair >= this.options.repairEveryMs) {
      this.lastRepair = now;
      await this.deps.discovery.repair(this.options.repairOlderThanMs);
    }
    if (this.owned.has(0)) await this.resumeStalledRebuild(now);
  }

  /**
   * A rebuild hands the crawl back before its scan; should its process die mid-scan, the hosts
   * the scan had not reached would stay unrestored. With TRAWL_AUTO_REBUILD, the scheduler owning
   * partition 0 resumes such a scan (from its cursor) once it has made no progress for
   * REBUILD_STALLED_MS.
   */
  private async resumeStalledRebuild(now: number): Promise<void> {
    const { rebuild, logger } = this.deps;
    if (!rebuild || this.rebuilding !== null) return;
    if (!(await rebuildStalled(this.deps.redis, this.deps.namespace, now, REBUILD_STALLED_MS))) return;
    logger.warn('a rebuild stopped mid-scan after handing the crawl back: resuming it (TRAWL_AUTO_REBUILD)');
    this.rebuilding = rebuild()
      .catch((error: unknown) => logger.error({ err: error }, 'resuming the rebuild failed; trying again on a later round'))
      .finally(() => {
        this.rebuilding = null;
      });
  }
}

/** The live schedulers of a crawl and the partitions each owns (for `trawl status` and the dashboard). */
export async function schedulerStatus(redis: Redis, namespace: string, partitions: number, clock: Clock): Promise<{ member: string; partitions: number[] }[]> {
  const members = await new Membership(redis, namespace, 'scheduler', '', 1, clock).live();
  const ownership = new PartitionOwnership(redis, namespace, '', 1);
  const owners = await Promise.all(Array.from({ length: partitions }, (_, p) => ownership.owner(p)));
  const byMember = new Map<string, number[]>(members.map((m) => [m, []]));
  owners.forEach((owner, p) => {
    if (owner === null) return;
    if (!byMember.has(owner)) byMember.set(owner, []);
    byMember.get(owner)?.push(p);
  });
  return [...byMember.entries()].map(([member, owned]) => ({ member, partitions: owned }));
}

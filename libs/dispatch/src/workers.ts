import { type Clock, sleep } from '@trawl/core';
import type { Redis } from '@trawl/redis';
import type { Logger } from '@trawl/telemetry';
import { Membership, Rounds, workerAssignments } from './membership.js';

export interface WorkerMembershipOptions {
  namespace: string;
  partitions: number;
  memberId: string;
  /** A worker that stops heartbeating drops out after this long; its partitions move on. */
  heartbeatTtlMs: number;
}

/**
 * Frees what a worker whose heartbeat lapsed held (its leases and host tokens at the gate:
 * `Frontier.releaseHolder`); returns how many leases went back to the frontier.
 */
export type ReleaseHolder = (member: string) => Promise<number>;

/**
 * How a worker notices that Redis lost the crawl and quiets down for the rebuild: every gate's
 * state went with the data, so a fetch still in flight would collide with the rebuilt crawl's
 * first request to its host. The rebuild waits for every live worker to say it is quiet
 * (`waitForQuietWorkers`) instead of for the longest fetch there could be.
 */
export interface WipeWatch {
  /** Whether the crawl's Redis data is there (its namespace settings). */
  intact: () => Promise<boolean>;
  /** Aborts the fetches in flight; resolves true once none is left (false: gave up waiting, try again). */
  quiesce: () => Promise<boolean>;
}

/** HASH worker member → when it said it had nothing in flight, after Redis lost the crawl. */
export const quietKey = (namespace: string): string => `${namespace}:wiped:quiet`;

/**
 * A fetch worker's place in the crawl: it heartbeats into `<namespace>:members:worker`, and every
 * round (a third of the TTL) works out from the live members which partitions it consumes
 * (`workerAssignments`), calling `onAssign` when that changes. A dead worker's partitions are
 * taken by the others as soon as its heartbeat runs out; a worker that stops leaves at once.
 * What each worker consumes is published in `<namespace>:workers` for `trawl status`.
 */
export class WorkerMembership {
  private readonly membership: Membership;
  private readonly rounds: Rounds;
  private current: number[] = [];
  /** Redis lost the crawl (seen on a heartbeat), and the rebuild has not restored it yet. */
  private wiped = false;

  constructor(
    private readonly redis: Redis,
    private readonly options: WorkerMembershipOptions,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly onAssign: (partitions: number[]) => void,
    private readonly releaseHolder?: ReleaseHolder,
    private readonly wipe?: WipeWatch,
  ) {
    this.membership = new Membership(redis, options.namespace, 'worker', options.memberId, options.heartbeatTtlMs, clock);
    // At least every half second: a dead worker's holds are freed by the first live worker whose
    // round sees its heartbeat lapse, so the round bounds how long its hosts wait past that.
    this.rounds = new Rounds(options.heartbeatTtlMs, () => this.tick(), (error) => logger.error({ err: error }, 'worker membership step failed'), LAPSE_CHECK_MS);
  }

  get partitions(): number[] {
    return this.current;
  }

  /** Joins and takes its first assignment. */
  start(): Promise<void> {
    return this.rounds.start();
  }

  async stop(): Promise<void> {
    await this.rounds.stop();
    await this.membership.leave().catch(() => undefined);
    await this.redis.hdel(workersKey(this.options.namespace), this.options.memberId).catch(() => undefined);
  }

  async tick(): Promise<void> {
    const { live, lapsed } = await this.membership.beat();
    for (const member of lapsed) await this.freeLapsed(member);
    const mine = workerAssignments(live.includes(this.options.memberId) ? live : [...live, this.options.memberId], this.options.partitions).get(this.options.memberId) ?? [];
    await this.redis.hset(workersKey(this.options.namespace), this.options.memberId, JSON.stringify({ partitions: mine, at: this.clock.now() }));
    if (mine.join(',') !== this.current.join(',')) {
      this.logger.info({ member: this.options.memberId, partitions: mine, workers: live.length }, 'consuming partitions');
      this.current = mine;
      this.onAssign(mine);
    }
    await this.watchForWipe();
  }

  /**
   * Every heartbeat: has Redis lost the crawl? Then abort the fetches in flight and, once none is
   * left, say so in `quietKey` (every heartbeat until the rebuild, which waits for it).
   */
  private async watchForWipe(): Promise<void> {
    if (!this.wipe) return;
    if (await this.wipe.intact()) {
      if (this.wiped) this.logger.info({ member: this.options.memberId }, 'the crawl is back in Redis: fetching again');
      this.wiped = false;
      return;
    }
    if (!this.wiped) {
      this.wiped = true;
      this.logger.error({ member: this.options.memberId }, 'Redis lost the crawl: aborting the fetches in flight until it is rebuilt');
    }
    if (!(await this.wipe.quiesce())) return;
    const key = quietKey(this.options.namespace);
    await this.redis.multi().hset(key, this.options.memberId, String(this.clock.now())).pexpire(key, QUIET_TTL_MS).exec();
  }

  /** A worker's heartbeat lapsed (this process noticed first): its holds end now, not with its leases. */
  private async freeLapsed(member: string): Promise<void> {
    if (!this.releaseHolder || member === this.options.memberId) return;
    const requeued = await this.releaseHolder(member);
    this.logger.warn({ member, requeued }, 'a worker stopped heartbeating: its leases and host tokens are freed');
  }
}

export const workersKey = (namespace: string): string => `${namespace}:workers`;

/** The longest a worker's membership round waits (a third of the heartbeat TTL when shorter). */
const LAPSE_CHECK_MS = 500;

/** How long a worker's word that it is quiet is kept (a rebuild deletes it when done). */
const QUIET_TTL_MS = 600_000;

/**
 * After Redis lost the crawl: waits until every live worker has said it has no fetch in flight
 * (`WipeWatch`), at most `maxWaitMs` (the longest fetch there could be). It first waits one
 * heartbeat TTL: by then every live worker has beaten since the loss, so it has re-joined the
 * membership (which went with the data) and seen the loss. `quiet` false: some worker never
 * said so (an older release, a hung process) and the wait ran out.
 */
export async function waitForQuietWorkers(
  redis: Redis,
  namespace: string,
  options: { heartbeatTtlMs: number; maxWaitMs: number; clock: Clock; pollMs?: number },
): Promise<{ quiet: boolean; waitedMs: number; workers: number }> {
  const { clock } = options;
  const started = clock.now();
  const waited = () => clock.now() - started;
  await sleep(Math.min(options.heartbeatTtlMs, options.maxWaitMs));
  const membership = new Membership(redis, namespace, 'worker', '', 1, clock);
  for (;;) {
    const [live, quiet] = await Promise.all([membership.live(), redis.hkeys(quietKey(namespace))]);
    const said = new Set(quiet);
    if (live.every((member) => said.has(member))) return { quiet: true, waitedMs: waited(), workers: live.length };
    if (waited() >= options.maxWaitMs) return { quiet: false, waitedMs: waited(), workers: live.length };
    await sleep(Math.min(options.pollMs ?? 100, Math.max(1, options.maxWaitMs - waited())));
  }
}

/** The live workers of a crawl and the partitions each consumes (for `trawl status` and the dashboard). */
export async function workerStatus(redis: Redis, namespace: string, clock: Clock): Promise<{ member: string; partitions: number[] }[]> {
  const live = new Set(await new Membership(redis, namespace, 'worker', '', 1, clock).live());
  const published = await redis.hgetall(workersKey(namespace));
  const out: { member: string; partitions: number[] }[] = [];
  for (const [member, raw] of Object.entries(published)) {
    if (!live.has(member)) {
      // Left behind by a worker that died: it is not a member any more.
      void redis.hdel(workersKey(namespace), member).catch(() => undefined);
      continue;
    }
    try {
      out.push({ member, partitions: (JSON.parse(raw) as { partitions: number[] }).partitions });
    } catch {
      out.push({ member, partitions: [] });
    }
  }
  return out.sort((a, b) => a.member.localeCompare(b.member));
}

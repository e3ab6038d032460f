import type { Clock } from '@trawl/core';
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

  constructor(
    private readonly redis: Redis,
    private readonly options: WorkerMembershipOptions,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly onAssign: (partitions: number[]) => void,
    private readonly releaseHolder?: ReleaseHolder,
  ) {
    this.membership = new Membership(redis, options.namespace, 'worker', options.memberId, options.heartbeatTtlMs, clock);
    this.rounds = new Rounds(options.heartbeatTtlMs, () => this.tick(), (error) => logger.error({ err: error }, 'worker membership step failed'));
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
  }

  /** A worker's heartbeat lapsed (this process noticed first): its holds end now, not with its leases. */
  private async freeLapsed(member: string): Promise<void> {
    if (!this.releaseHolder || member === this.options.memberId) return;
    const requeued = await this.releaseHolder(member);
    this.logger.warn({ member, requeued }, 'a worker stopped heartbeating: its leases and host tokens are freed');
  }
}

export const workersKey = (namespace: string): string => `${namespace}:workers`;

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

import { type Clock, sleep } from '@trawl/core';
import { HashRing } from '@trawl/frontier';
import type { Redis } from '@trawl/redis';

/**
 * Live members of one role (schedulers, workers) of a crawl: each heartbeats an expiry time into
 * `<namespace>:members:<role>` (a sorted set). A member that stops heartbeating — killed, hung,
 * partitioned away — drops out after `ttlMs`; one that stops cleanly leaves at once.
 */
export class Membership {
  readonly key: string;

  constructor(
    private readonly redis: Redis,
    namespace: string,
    role: string,
    readonly memberId: string,
    private readonly ttlMs: number,
    private readonly clock: Clock,
  ) {
    this.key = `${namespace}:members:${role}`;
  }

  /** Says this member is alive for another `ttlMs`, forgets the expired ones, and returns the live members. */
  async heartbeat(): Promise<string[]> {
    return (await this.beat()).live;
  }

  /**
   * As `heartbeat`, and also returns the members whose heartbeat lapsed and that this call
   * forgot: each lapsed member is reported to exactly one caller (the transaction that removes
   * it), which frees what it held.
   */
  async beat(): Promise<{ live: string[]; lapsed: string[] }> {
    const now = this.clock.now();
    const [, lapsed, , live] = (await this.redis
      .multi()
      .zadd(this.key, now + this.ttlMs, this.memberId)
      .zrangebyscore(this.key, '-inf', now)
      .zremrangebyscore(this.key, '-inf', now)
      .zrangebyscore(this.key, now, '+inf')
      .exec()) as [unknown, [Error | null, string[]], unknown, [Error | null, string[]]];
    if (lapsed[0]) throw lapsed[0];
    if (live[0]) throw live[0];
    return { live: live[1], lapsed: lapsed[1] };
  }

  /** The live members (without heartbeating). */
  async live(): Promise<string[]> {
    return this.redis.zrangebyscore(this.key, this.clock.now(), '+inf');
  }

  async leave(): Promise<void> {
    await this.redis.zrem(this.key, this.memberId);
  }
}

/**
 * Which member the consistent-hash ring prefers for each partition: adding or removing a member
 * moves only about 1/N of the partitions, so warm state (connections, DNS and robots.txt caches)
 * mostly stays where it was.
 */
export function preferredOwners(members: readonly string[], partitions: number): string[] {
  if (members.length === 0) return [];
  const ring = new HashRing([...members].sort());
  return Array.from({ length: partitions }, (_, p) => ring.owner(`partition:${p}`));
}

/**
 * The partitions each live worker consumes, on the consistent-hash ring: every partition goes to
 * its first ⌈workers / partitions⌉ members clockwise, so each worker has work whatever the counts
 * (one partition and three workers: all three consume it), a worker keeps its partitions — and
 * their warm connections, DNS and robots.txt caches — while others come and go, and a joining or
 * leaving worker moves only about 1/N of them.
 */
export function workerAssignments(members: readonly string[], partitions: number): Map<string, number[]> {
  const out = new Map<string, number[]>(members.map((m) => [m, []]));
  if (members.length === 0) return out;
  const ring = new HashRing([...members].sort());
  const replicas = Math.max(1, Math.ceil(members.length / partitions));
  for (let p = 0; p < partitions; p += 1) {
    for (const member of ring.owners(`partition:${p}`, replicas)) out.get(member)?.push(p);
  }
  return out;
}

/**
 * Runs `round` once, then every third of a membership's TTL (or `everyMs`, when given and
 * shorter) until stopped: often enough that a heartbeat or lease is renewed twice before it could
 * run out. A failed round is reported and the next one tries again.
 */
export class Rounds {
  private readonly controller = new AbortController();
  private loop: Promise<void> | null = null;

  constructor(
    private readonly ttlMs: number,
    private readonly round: () => Promise<void>,
    private readonly onError: (error: unknown) => void,
    private readonly everyMs?: number,
  ) {}

  /** Runs the first round (its errors reach the caller), then keeps going in the background. */
  async start(): Promise<void> {
    await this.round();
    this.loop = this.run();
  }

  /** Stops after the round in progress, if any. */
  async stop(): Promise<void> {
    this.controller.abort();
    await this.loop;
  }

  private async run(): Promise<void> {
    const signal = this.controller.signal;
    while (!signal.aborted) {
      await sleep(Math.max(50, Math.min(Math.floor(this.ttlMs / 3), this.everyMs ?? Number.POSITIVE_INFINITY)), signal);
      if (signal.aborted) break;
      try {
        await this.round();
      } catch (error) {
        this.onError(error);
      }
    }
  }
}

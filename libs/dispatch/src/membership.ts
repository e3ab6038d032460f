import { type Clock, sleep } from '@trawl/core';
import { murmur3 } from '@trawl/frontier';
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
 * Which member each partition's scheduler should be: one per partition, spread evenly (see
 * `balancedOwners`), so adding or removing a member moves only a few partitions and warm state
 * (connections, DNS and robots.txt caches) mostly stays where it was.
 */
export function preferredOwners(members: readonly string[], partitions: number): string[] {
  if (members.length === 0) return [];
  return balancedOwners(members, partitions, 1).map((owners) => owners[0] as string);
}

/**
 * The partitions each live worker consumes: every partition goes to ⌈workers / partitions⌉
 * members, so each worker has work whatever the counts (one partition and three workers: all
 * three consume it); the partitions are spread evenly (twelve over three workers: four each,
 * where a ring's draw would often give one of them six), a worker keeps its partitions — and
 * their warm connections, DNS and robots.txt caches — while others come and go, and a joining or
 * leaving worker moves only some of them.
 */
export function workerAssignments(members: readonly string[], partitions: number): Map<string, number[]> {
  const out = new Map<string, number[]>(members.map((m) => [m, []]));
  if (members.length === 0) return out;
  const owners = balancedOwners(members, partitions, Math.max(1, Math.ceil(out.size / partitions)));
  owners.forEach((of, p) => {
    for (const member of of) out.get(member)?.push(p);
  });
  return out;
}

/**
 * Rendezvous hashing with bounded loads: every (partition, member) pair has a fixed weight (a
 * hash of both), and pairs are taken heaviest first while the partition still needs owners and
 * the member has room — first up to the even share rounded down, then rounded up (then, only if
 * distinct owners run short, anywhere). So each member ends with ⌊share⌋ or ⌈share⌉ partitions
 * whoever the members are, where a plain hash ring draws each partition's owner at random and,
 * with a few partitions per member, gives some twice their share (the busiest member sets the
 * crawl's pace). A pair's weight never changes: a member that joins takes its share and about
 * half as many again move between the others to even the load; when one leaves, the others keep
 * nearly all theirs. Deterministic in the set of members, so every member computes the same.
 */
export function balancedOwners(members: readonly string[], partitions: number, replicas: number): readonly (readonly string[])[] {
  const sorted = [...new Set(members)].sort();
  const key = `${partitions}\n${replicas}\n${sorted.join('\n')}`;
  const known = balanced.get(key);
  if (known) return known;
  const pairs: { partition: number; member: string; weight: number }[] = [];
  for (let partition = 0; partition < partitions; partition += 1) {
    for (const member of sorted) pairs.push({ partition, member, weight: murmur3(`${member}\npartition:${partition}`) });
  }
  pairs.sort((a, b) => b.weight - a.weight || a.partition - b.partition || (a.member < b.member ? -1 : 1));
  const owners: string[][] = Array.from({ length: partitions }, () => []);
  const load = new Map(sorted.map((m) => [m, 0]));
  const share = (partitions * Math.min(replicas, sorted.length)) / sorted.length;
  for (const room of [Math.floor(share), Math.ceil(share), Number.POSITIVE_INFINITY]) {
    for (const { partition, member } of pairs) {
      const of = owners[partition] as string[];
      const taken = load.get(member) as number;
      if (of.length >= replicas || taken >= room || of.includes(member)) continue;
      of.push(member);
      load.set(member, taken + 1);
    }
  }
  // Members change seldom and every membership round asks again (a crawl process asks for its
  // scheduler's and its worker's shares): the last few answers are kept.
  if (balanced.size >= 4) balanced.clear();
  balanced.set(key, owners);
  return owners;
}

const balanced = new Map<string, readonly (readonly string[])[]>();

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

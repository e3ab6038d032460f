import { type Clock, systemClock } from '@trawl/core';
import type { Redis } from '@trawl/redis';
import { BoundedLru } from './lru.js';
import { originOf } from './origin.js';
import type { RobotsEntry } from './policy.js';
import { readEntry } from './schema.js';

export interface RobotsCacheOptions {
  /** The crawl's key prefix (namespace); keys are `<prefix>:robots:<origin>`. */
  prefix: string;
  /** How long this process trusts its own copy before reading Redis again (default 5 s). */
  localTtlMs?: number;
  /** Entries kept in process at most (default 1000). */
  localMax?: number;
  /** Body characters kept in process at most, over all entries (default 16 Mi). */
  localMaxChars?: number;
  /** How long Redis keeps an entry after its own expiry or retry time (default 1 h). */
  redisGraceMs?: number;
  /**
   * How long Redis keeps an entry that holds a readable copy (rules, an allow-all, or a failing
   * entry's last good copy) after it is written, at least (default 0: no longer than above). The
   * copy must outlive the key's usual expiry for the outage fallback (RFC 9309 §2.4: a cached copy
   * after 30 days unreachable) to find it when a host's robots.txt fails after a quiet spell.
   */
  keepLastGoodMs?: number;
  clock?: Clock;
  /** Told when a stored value is unusable (it is then treated as missing). */
  onCorrupt?: (origin: string, problem: string) => void;
}

export interface RobotsLookup {
  entry: RobotsEntry | null;
  /** Where the answer came from; 'corrupt': Redis held something unusable. */
  source: 'local' | 'redis' | 'missing' | 'corrupt';
  /** Why a stored value was unusable (source 'corrupt'), else null. */
  problem: string | null;
}

const bodyChars = (entry: RobotsEntry): number =>
  entry.kind === 'rules' ? entry.body.length : entry.kind === 'unavailable' ? (entry.lastGood?.body.length ?? 0) : 0;

/**
 * The robots.txt cache shared by every worker: one Redis key per origin holding the entry as JSON,
 * with a Redis expiry a little after the entry's own so dead entries don't pile up, and a short-lived
 * in-process LRU in front so a busy host doesn't cost a Redis read per URL.
 */
export class RobotsCache {
  private readonly local: BoundedLru<string, { entry: RobotsEntry; storedAt: number }>;
  private readonly localTtlMs: number;
  private readonly redisGraceMs: number;
  private readonly keepLastGoodMs: number;
  private readonly clock: Clock;

  constructor(
    private readonly redis: Redis,
    private readonly options: RobotsCacheOptions,
  ) {
    this.localTtlMs = options.localTtlMs ?? 5_000;
    this.redisGraceMs = options.redisGraceMs ?? 60 * 60 * 1000;
    this.keepLastGoodMs = options.keepLastGoodMs ?? 0;
    this.clock = options.clock ?? systemClock;
    this.local = new BoundedLru(options.localMax ?? 1_000, options.localMaxChars ?? 16 * 1024 * 1024, (v) => bodyChars(v.entry) + 256);
  }

  /**
   * The Redis key of an origin's entry. `tierLevel`: the copy read through the proxy tier a
   * blocked host was moved up to (a blocked tier's answer, a 403 or a challenge page, is not the
   * site's robots.txt, so each tier level keeps its own copy).
   */
  key(origin: string, tierLevel = 0): string {
    return `${this.options.prefix}:robots:${originOf(origin)}${tierLevel > 0 ? `#tier+${tierLevel}` : ''}`;
  }

  async get(origin: string, tierLevel = 0): Promise<RobotsEntry | null> {
    return (await this.lookup(origin, tierLevel)).entry;
  }

  /** Like `get`, and says where the answer came from and why a stored value was unusable. Never throws on bad data. */
  async lookup(origin: string, tierLevel = 0): Promise<RobotsLookup> {
    const key = this.key(origin, tierLevel);
    const now = this.clock.now();
    const mine = this.local.get(key);
    if (mine !== undefined && now - mine.storedAt < this.localTtlMs) return { entry: mine.entry, source: 'local', problem: null };

    const raw = await this.redis.get(key);
    if (raw === null) {
      this.local.delete(key);
      return { entry: null, source: 'missing', problem: null };
    }
    const read = readEntry(raw);
    if ('problem' in read) {
      this.local.delete(key);
      this.options.onCorrupt?.(originOf(origin), read.problem);
      return { entry: null, source: 'corrupt', problem: read.problem };
    }
    this.local.set(key, { entry: read.entry, storedAt: now });
    return { entry: read.entry, source: 'redis', problem: null };
  }

  async set(origin: string, entry: RobotsEntry, tierLevel = 0): Promise<void> {
    const key = this.key(origin, tierLevel);
    const now = this.clock.now();
    const until = entry.kind === 'unavailable' ? entry.retryAt : entry.expiresAt;
    const readable = entry.kind !== 'unavailable' || entry.lastGood !== null;
    const ttlMs = Math.max(Math.max(0, Math.ceil(until - now)) + this.redisGraceMs, readable ? this.keepLastGoodMs : 0);
    await this.redis.set(key, JSON.stringify(entry), 'PX', Math.max(1, ttlMs));
    this.local.set(key, { entry, storedAt: now });
  }

  /** Drops this process's copies (another worker's write becomes visible at once). */
  forgetLocal(): void {
    this.local.clear();
  }
}

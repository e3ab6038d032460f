import { randomUUID } from 'node:crypto';
import type { Redis } from '@trawl/redis';

/** An operator's say on rendering one host, over TRAWL_RENDER's decision. */
export type RenderOverride = 'always' | 'never';

export const RENDER_OVERRIDES: readonly RenderOverride[] = ['always', 'never'];

/**
 * Per-host rendering overrides set by operators (the dashboard's host page, the API), shared by
 * every process of the crawl through Redis (`<namespace>:render:hosts`, host → mode). A fetch
 * stage holds a copy of them all, and checks at most once per `cacheMs` whether it is still
 * current: every change writes a new random version (`<namespace>:render:version`), so the
 * check is one GET, and the hash is read again only after a change (or after Redis lost it). A
 * host without one follows TRAWL_RENDER. This is the fast copy: PostgreSQL's `render_overrides`
 * is the source of truth (the API writes it first), and a frontier rebuilt after Redis lost the
 * crawl puts them back (`restore`), like pauses.
 */
export class RenderOverrides {
  private readonly key: string;
  private readonly versionKey: string;
  private copy = new Map<string, RenderOverride>();
  /** The version the copy was read at (null: none was set), and when it was last checked. */
  private version: string | null = null;
  private checkedAt = Number.NEGATIVE_INFINITY;
  private refreshing: Promise<void> | null = null;

  constructor(
    private readonly redis: Redis,
    namespace: string,
    private readonly now: () => number = Date.now,
    private readonly cacheMs = 2000,
  ) {
    this.key = `${namespace}:render:hosts`;
    this.versionKey = `${namespace}:render:version`;
  }

  /** Sets (or, with null, clears) a host's override. */
  async set(host: string, mode: RenderOverride | null): Promise<void> {
    const change = this.redis.multi();
    if (mode === null) change.hdel(this.key, host);
    else change.hset(this.key, host, mode);
    await change.set(this.versionKey, randomUUID()).exec();
    this.checkedAt = Number.NEGATIVE_INFINITY;
  }

  /** Puts overrides back from their durable copy, in one round trip; hosts not named keep theirs. */
  async restore(overrides: readonly { host: string; mode: RenderOverride }[]): Promise<void> {
    if (overrides.length === 0) return;
    await this.redis
      .multi()
      .hset(this.key, Object.fromEntries(overrides.map((o) => [o.host, o.mode])))
      .set(this.versionKey, randomUUID())
      .exec();
    this.checkedAt = Number.NEGATIVE_INFINITY;
  }

  /** A host's override, as of a check within the last `cacheMs`. */
  async of(host: string): Promise<RenderOverride | null> {
    if (this.now() - this.checkedAt >= this.cacheMs) await this.refresh();
    return this.copy.get(host) ?? null;
  }

  /** One check at a time, shared by every caller that finds the copy due. */
  private refresh(): Promise<void> {
    this.refreshing ??= this.check().finally(() => {
      this.refreshing = null;
    });
    return this.refreshing;
  }

  private async check(): Promise<void> {
    const version = await this.redis.get(this.versionKey);
    if (version === null || version !== this.version) {
      const all = await this.redis.hgetall(this.key);
      this.copy = new Map(Object.entries(all).flatMap(([host, raw]) => RENDER_OVERRIDES.filter((m) => m === raw).map((m): [string, RenderOverride] => [host, m])));
      this.version = version;
    }
    this.checkedAt = this.now();
  }
}

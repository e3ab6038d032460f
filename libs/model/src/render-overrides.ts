import type { Redis } from '@trawl/redis';

/** An operator's say on rendering one host, over TRAWL_RENDER's decision. */
export type RenderOverride = 'always' | 'never';

export const RENDER_OVERRIDES: readonly RenderOverride[] = ['always', 'never'];

/**
 * Per-host rendering overrides set by operators (the dashboard's host page, the API), shared by
 * every process of the crawl through Redis (`<namespace>:render:hosts`, host → mode). A fetch
 * stage reads a host's override at most once per `cacheMs`; a host without one follows
 * TRAWL_RENDER. This is the fast copy: PostgreSQL's `render_overrides` is the source of truth
 * (the API writes it first), and a frontier rebuilt after Redis lost the crawl puts them back
 * (`restore`), like pauses.
 */
export class RenderOverrides {
  private readonly key: string;
  private readonly cached = new Map<string, { mode: RenderOverride | null; at: number }>();

  constructor(
    private readonly redis: Redis,
    namespace: string,
    private readonly now: () => number = Date.now,
    private readonly cacheMs = 2000,
  ) {
    this.key = `${namespace}:render:hosts`;
  }

  /** Sets (or, with null, clears) a host's override. */
  async set(host: string, mode: RenderOverride | null): Promise<void> {
    if (mode === null) await this.redis.hdel(this.key, host);
    else await this.redis.hset(this.key, host, mode);
    this.cached.delete(host);
  }

  /** Puts overrides back from their durable copy, in one round trip; hosts not named keep theirs. */
  async restore(overrides: readonly { host: string; mode: RenderOverride }[]): Promise<void> {
    if (overrides.length === 0) return;
    await this.redis.hset(this.key, Object.fromEntries(overrides.map((o) => [o.host, o.mode])));
    for (const { host } of overrides) this.cached.delete(host);
  }

  /** A host's override, as read within the last `cacheMs`. */
  async of(host: string): Promise<RenderOverride | null> {
    const hit = this.cached.get(host);
    if (hit !== undefined && this.now() - hit.at < this.cacheMs) return hit.mode;
    const raw = await this.redis.hget(this.key, host);
    const mode = RENDER_OVERRIDES.find((m) => m === raw) ?? null;
    this.cached.delete(host);
    this.cached.set(host, { mode, at: this.now() });
    // Bounded: the oldest reads go first.
    for (const oldest of this.cached.keys()) {
      if (this.cached.size <= 10_000) break;
      this.cached.delete(oldest);
    }
    return mode;
  }
}

import type pg from 'pg';
import type { UrlState } from './database.js';

/** A host an operator paused ('*': the whole crawl). */
export interface PausedHostRow {
  host: string;
  pausedAt: number;
  pausedBy: string | null;
  /** Why trawl paused it itself (a blocked host), or null: an operator's pause. */
  reason: string | null;
}

/** An operator's rendering override for one host, as PostgreSQL keeps it. */
export interface RenderOverrideRow {
  host: string;
  mode: 'always' | 'never';
  setAt: number;
  setBy: string | null;
}

/** One recent fetch of a host, as crawled_pages records it. */
export interface RecentFetch {
  url: string;
  urlHash: string;
  httpStatus: number | null;
  errorCode: string | null;
  errorMessage: string | null;
  fetchedAt: number;
  fetchMs: number | null;
  contentLength: number | null;
  nextCrawlAt: number | null;
  /** Whether its links and text came from a rendered DOM, and why (null: rendering was not considered). */
  rendered: boolean;
  renderReason: string | null;
}

export interface KnownUrl {
  url: string;
  host: string;
  depth: number;
  state: UrlState;
}

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;
const ms = (date: Date | null): number | null => (date === null ? null : date.getTime());

/**
 * What operators (the dashboard, the CLI) read and change in PostgreSQL beyond the crawl's own
 * writes: paused hosts, the frontier's age, a host's recent fetches, a URL by fingerprint, and
 * fetch outcomes by error code (migration 1700000000050 adds the indexes these need). Every
 * method is one statement.
 */
export class OperatorQueries {
  private readonly t: { urls: string; pages: string; paused: string; render: string };

  constructor(
    private readonly pool: pg.Pool,
    schema: string,
  ) {
    if (!IDENTIFIER.test(schema)) throw new Error(`invalid schema name: ${schema}`);
    this.t = { urls: `"${schema}".urls`, pages: `"${schema}".crawled_pages`, paused: `"${schema}".paused_hosts`, render: `"${schema}".render_overrides` };
  }

  async pausedHosts(): Promise<PausedHostRow[]> {
    const { rows } = await this.pool.query<{ host: string; paused_at: Date; paused_by: string | null; reason: string | null }>(
      `SELECT host, paused_at, paused_by, reason FROM ${this.t.paused} ORDER BY host`,
    );
    return rows.map((r) => ({ host: r.host, pausedAt: r.paused_at.getTime(), pausedBy: r.paused_by, reason: r.reason }));
  }

  /** Records a pause (kept as first paused) or its end. Host '*' is the whole crawl. */
  async setPaused(hosts: readonly string[], paused: boolean, by: string | null = null): Promise<void> {
    if (hosts.length === 0) return;
    if (paused) {
      await this.pool.query(`INSERT INTO ${this.t.paused} (host, paused_by) SELECT h, $2 FROM unnest($1::text[]) AS h ON CONFLICT (host) DO NOTHING`, [[...new Set(hosts)], by]);
    } else {
      await this.pool.query(`DELETE FROM ${this.t.paused} WHERE host = ANY($1::text[])`, [[...hosts]]);
    }
  }

  /** Records a host trawl paused itself, with why (kept as first paused). */
  async setBlocked(host: string, reason: string): Promise<void> {
    await this.pool.query(`INSERT INTO ${this.t.paused} (host, paused_by, reason) VALUES ($1, 'trawl', $2) ON CONFLICT (host) DO NOTHING`, [host, reason]);
  }

  /** Every host's rendering override (migration 1700000000095), by host. */
  async renderOverrides(): Promise<RenderOverrideRow[]> {
    const { rows } = await this.pool.query<{ host: string; mode: 'always' | 'never'; set_at: Date; set_by: string | null }>(
      `SELECT host, mode, set_at, set_by FROM ${this.t.render} ORDER BY host`,
    );
    return rows.map((r) => ({ host: r.host, mode: r.mode, setAt: r.set_at.getTime(), setBy: r.set_by }));
  }

  /** Records a host's rendering override (the last one set wins) or, with null, its end. */
  async setRenderOverride(host: string, mode: 'always' | 'never' | null, by: string | null = null): Promise<void> {
    if (mode === null) {
      await this.pool.query(`DELETE FROM ${this.t.render} WHERE host = $1`, [host]);
      return;
    }
    await this.pool.query(
      `INSERT INTO ${this.t.render} (host, mode, set_by) VALUES ($1, $2, $3)
       ON CONFLICT (host) DO UPDATE SET mode = EXCLUDED.mode, set_at = now(), set_by = EXCLUDED.set_by`,
      [host, mode, by],
    );
  }

  /** When the oldest URL still queued was queued (null: none is). */
  async oldestQueuedAt(): Promise<number | null> {
    const { rows } = await this.pool.query<{ at: Date | null }>(`SELECT min(updated_at) AS at FROM ${this.t.urls} WHERE state = 'queued'`);
    return ms(rows[0]?.at ?? null);
  }

  async url(hash: Buffer): Promise<KnownUrl | null> {
    const { rows } = await this.pool.query<{ url: string; host: string; depth: number; state: UrlState }>(`SELECT url, host, depth, state FROM ${this.t.urls} WHERE url_hash = $1`, [hash]);
    return rows[0] ?? null;
  }

  /**
   * The URL is in the frontier again (an operator's refresh), in Redis: if it was spilled, it no
   * longer waits in PostgreSQL (its host's spilled count is then one too high for a while, which
   * a refill that finds none corrects).
   */
  async markRequeued(hash: Buffer): Promise<void> {
    await this.pool.query(`UPDATE ${this.t.urls} SET state = 'queued', spill_band = NULL, spill_entry = NULL, updated_at = now() WHERE url_hash = $1`, [hash]);
  }

  /** Does PostgreSQL know this host at all (a URL of it was ever discovered)? */
  async knowsHost(host: string): Promise<boolean> {
    const { rowCount } = await this.pool.query(`SELECT 1 FROM ${this.t.urls} WHERE host = $1 LIMIT 1`, [host]);
    return (rowCount ?? 0) > 0;
  }

  /** URLs of a host by state. */
  async hostUrlStates(host: string): Promise<Record<UrlState, number>> {
    const counts: Record<UrlState, number> = { new: 0, queued: 0, done: 0, failed: 0, skipped: 0 };
    const { rows } = await this.pool.query<{ state: UrlState; n: string }>(`SELECT state, count(*) AS n FROM ${this.t.urls} WHERE host = $1 GROUP BY state`, [host]);
    for (const r of rows) counts[r.state] = Number(r.n);
    return counts;
  }

  /** The host's latest fetches, newest first. */
  async recentFetches(host: string, limit = 20): Promise<RecentFetch[]> {
    const { rows } = await this.pool.query<{
      url: string;
      url_hash: Buffer;
      http_status: number | null;
      error_code: string | null;
      error_message: string | null;
      fetched_at: Date;
      fetch_ms: number | null;
      content_length: number | null;
      next_crawl_at: Date | null;
      rendered: boolean;
      render_reason: string | null;
    }>(
      `SELECT url, url_hash, http_status, error_code, error_message, fetched_at, fetch_ms, content_length, next_crawl_at, rendered, render_reason
       FROM ${this.t.pages} WHERE host = $1 ORDER BY fetched_at DESC LIMIT $2`,
      [host, limit],
    );
    return rows.map((r) => ({
      url: r.url,
      urlHash: r.url_hash.toString('hex'),
      httpStatus: r.http_status,
      errorCode: r.error_code,
      errorMessage: r.error_message,
      fetchedAt: r.fetched_at.getTime(),
      fetchMs: r.fetch_ms,
      contentLength: r.content_length,
      nextCrawlAt: ms(r.next_crawl_at),
      rendered: r.rendered,
      renderReason: r.render_reason,
    }));
  }

  /** Recorded pages by error code, most frequent first. */
  async errorCodes(limit = 20): Promise<{ code: string; pages: number }[]> {
    const { rows } = await this.pool.query<{ code: string; n: string }>(
      `SELECT error_code AS code, count(*) AS n FROM ${this.t.pages} WHERE error_code IS NOT NULL GROUP BY error_code ORDER BY n DESC, code LIMIT $1`,
      [limit],
    );
    return rows.map((r) => ({ code: r.code, pages: Number(r.n) }));
  }
}

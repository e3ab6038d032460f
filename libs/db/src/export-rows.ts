import type { Database } from './database.js';

/** A crawled page as a WARC export needs it (the shape of `@trawl/warc`'s ExportRow). */
export interface PageForExport {
  url: string;
  status: number | null;
  contentType: string | null;
  charset: string | null;
  fetchedAt: Date;
  storageKey: string | null;
  contentHash: string | null;
  contentLength: number | null;
  redirectTo: string | null;
  truncated: boolean;
  bodySkipped: boolean;
  duplicateKind: 'exact' | 'near' | null;
  /** The URL of the first page of the duplicate cluster. */
  duplicateOfUrl: string | null;
  duplicateDistance: number | null;
}

export interface PagesForExportOptions {
  /** Only this host (`crawled_pages.host`). */
  host?: string;
  /** Only pages fetched at or after this time. */
  since?: Date;
  /** Rows per query. Default 500. */
  batchSize?: number;
}

/**
 * Every crawled page that has an HTTP status, in batches ordered by url_hash (keyset pages, so
 * a long export neither holds a cursor nor re-reads what it has passed). Each batch is one
 * query that reads the index on url_hash.
 */
export async function* pagesForExport(db: Pick<Database, 'pool' | 'options'>, options: PagesForExportOptions = {}): AsyncGenerator<PageForExport> {
  const pages = `"${db.options.schema}".crawled_pages`;
  const batchSize = options.batchSize ?? 500;
  let after: Buffer = Buffer.alloc(0);
  for (;;) {
    const { rows } = await db.pool.query<{
      url_hash: Buffer;
      url: string;
      http_status: number | null;
      content_type: string | null;
      charset: string | null;
      fetched_at: Date;
      storage_key: string | null;
      content_hash: string | null;
      content_length: number | null;
      redirect_to: string | null;
      truncated: boolean;
      body_skipped: boolean;
      duplicate_kind: 'exact' | 'near' | null;
      duplicate_of_url: string | null;
      duplicate_distance: number | null;
    }>(
      `SELECT p.url_hash, p.url, p.http_status, p.content_type, p.charset, p.fetched_at, p.storage_key, p.content_hash,
              p.content_length, p.redirect_to, p.truncated, p.body_skipped, p.duplicate_kind, d.url AS duplicate_of_url,
              p.duplicate_distance
       FROM ${pages} p LEFT JOIN ${pages} d ON d.url_hash = p.duplicate_of
       WHERE p.url_hash > $1 AND p.http_status IS NOT NULL
         AND ($2::text IS NULL OR p.host = $2) AND ($3::timestamptz IS NULL OR p.fetched_at >= $3)
       ORDER BY p.url_hash LIMIT $4`,
      [after, options.host ?? null, options.since ?? null, batchSize],
    );
    for (const r of rows) {
      yield {
        url: r.url,
        status: r.http_status,
        contentType: r.content_type,
        charset: r.charset,
        fetchedAt: r.fetched_at,
        storageKey: r.storage_key,
        contentHash: r.content_hash,
        contentLength: r.content_length,
        redirectTo: r.redirect_to,
        truncated: r.truncated,
        bodySkipped: r.body_skipped,
        duplicateKind: r.duplicate_kind,
        duplicateOfUrl: r.duplicate_of_url,
        duplicateDistance: r.duplicate_distance,
      };
    }
    const last = rows.at(-1);
    if (last === undefined || rows.length < batchSize) return;
    after = last.url_hash;
  }
}

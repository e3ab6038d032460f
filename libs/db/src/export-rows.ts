import type { Database } from './database.js';

/**
 * A crawled page as an export needs it: what a WARC needs (the shape of `@trawl/warc`'s
 * ExportRow), and what the page says about itself (`trawl export pages`).
 */
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
  title: string | null;
  description: string | null;
  language: string | null;
  canonicalUrl: string | null;
  wordCount: number | null;
  /** Where the page's visible text is stored (the content store's key), if it has any. */
  textKey: string | null;
  /** Where the DOM a headless browser rendered is stored, if the page was rendered. */
  renderedKey: string | null;
}

export interface PagesForExportOptions {
  /** Only this host (`crawled_pages.host`). */
  host?: string;
  /** Only pages fetched at or after this time. */
  since?: Date;
  /** Rows per query. Default 500. */
  batchSize?: number;
}

/** The pages an export takes: with an HTTP status, of the host if given, fetched since the time if given. */
const exported = (host: string, since: string): string =>
  `p.http_status IS NOT NULL AND (${host}::text IS NULL OR p.host = ${host}) AND (${since}::timestamptz IS NULL OR p.fetched_at >= ${since})`;

/** How many pages `pagesForExport` yields with these options (for a progress bar). */
export async function countPagesForExport(db: Pick<Database, 'pool' | 'options'>, options: Omit<PagesForExportOptions, 'batchSize'> = {}): Promise<number> {
  const { rows } = await db.pool.query<{ n: string }>(
    `SELECT count(*) AS n FROM "${db.options.schema}".crawled_pages p WHERE ${exported('$1', '$2')}`,
    [options.host ?? null, options.since ?? null],
  );
  return Number(rows[0]?.n ?? 0);
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
      title: string | null;
      description: string | null;
      language: string | null;
      canonical_url: string | null;
      word_count: number | null;
      text_key: string | null;
      rendered_key: string | null;
    }>(
      `SELECT p.url_hash, p.url, p.http_status, p.content_type, p.charset, p.fetched_at, p.storage_key, p.content_hash,
              p.content_length, p.redirect_to, p.truncated, p.body_skipped, p.duplicate_kind, d.url AS duplicate_of_url,
              p.duplicate_distance, p.title, p.description, p.language, p.canonical_url, p.word_count, p.text_key,
              p.rendered_key
       FROM ${pages} p LEFT JOIN ${pages} d ON d.url_hash = p.duplicate_of
       WHERE p.url_hash > $1 AND ${exported('$2', '$3')}
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
        title: r.title,
        description: r.description,
        language: r.language,
        canonicalUrl: r.canonical_url,
        wordCount: r.word_count,
        textKey: r.text_key,
        renderedKey: r.rendered_key,
      };
    }
    const last = rows.at(-1);
    if (last === undefined || rows.length < batchSize) return;
    after = last.url_hash;
  }
}

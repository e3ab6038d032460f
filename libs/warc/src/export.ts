import { KnownCaptures } from './known-captures.js';
import { type HttpHeaders, payloadDigest } from './records.js';
import { WarcWriter, type WarcWriterOptions, type WrittenRecord } from './writer.js';

/**
 * One crawled page as the crawl database holds it (crawled_pages, joined to the first page of
 * its duplicate cluster for `duplicateOfUrl`).
 */
export interface ExportRow {
  url: string;
  /** null: the fetch failed (nothing to archive). */
  status: number | null;
  /** Media type without parameters, as recorded. */
  contentType: string | null;
  /** The charset the body was decoded with, if any (added to Content-Type). */
  charset?: string | null;
  fetchedAt: number | Date;
  storageKey: string | null;
  /** sha256 hex of the body. */
  contentHash: string | null;
  redirectTo?: string | null;
  truncated?: boolean;
  /** The body was never downloaded (a type trawl skips): the row is left out. */
  bodySkipped?: boolean;
  /**
   * Bytes of body received. With no storage key, a non-empty body was not kept (a
   * near-duplicate under TRAWL_NEAR_DUP_STORE_BODY=false): the row is left out.
   */
  contentLength?: number | null;
  duplicateKind?: 'exact' | 'near' | null;
  duplicateOfUrl?: string | null;
  duplicateDistance?: number | null;
  /** Where the DOM a headless browser rendered from this page is stored (a conversion record). */
  renderedKey?: string | null;
}

/** Where bodies come from: a `ContentStore` (`@trawl/store`) fits. */
export interface BodySource {
  get(key: string): Promise<Buffer | null>;
}

export interface ExportOptions extends WarcWriterOptions {
  /** Bodies remembered to write revisits for repeats (oldest forgotten first). Default 1,000,000. */
  rememberBodies?: number;
}

export interface ExportSummary {
  files: readonly string[];
  responses: number;
  revisits: number;
  metadata: number;
  /** Rendered DOMs written as conversion records. */
  conversions: number;
  /** Rows left out: no HTTP response (a failed fetch), or a body never downloaded or not kept. */
  skipped: number;
  /** Rows whose body the store no longer has (left out). */
  missingBodies: number;
}

const EXPORT_DESCRIPTION =
  'Exported by trawl from its crawl database and content store. Payloads are the bodies as stored ' +
  '(decompressed: Content-Encoding removed). HTTP headers are reconstructed from the database ' +
  '(Content-Type, Content-Length, Location): the original headers are not kept.';

/**
 * Writes the pages of `rows` to WARC files in `options.dir` (with CDXJ indexes), bodies read
 * from `store`. A body already written in this export is written again as a revisit record
 * (identical payload digest) referring to its first capture: exact duplicates and unchanged
 * pages cost a few hundred bytes. A 304 whose body was not written yet is archived as the
 * 200 response it confirmed, with a metadata record saying so; near-duplicates get a metadata
 * record naming the first page of their cluster; a rendered page's DOM follows its capture as a
 * `conversion` record referring to it.
 */
export async function exportWarc(rows: AsyncIterable<ExportRow> | Iterable<ExportRow>, store: BodySource, options: ExportOptions): Promise<ExportSummary> {
  const writer = new WarcWriter({ ...options, warcinfo: { description: EXPORT_DESCRIPTION, ...options.warcinfo } });
  const known = new KnownCaptures(options.rememberBodies ?? 1_000_000);
  const summary = { responses: 0, revisits: 0, metadata: 0, conversions: 0, skipped: 0, missingBodies: 0 };
  try {
    for await (const row of rows) {
      const bodyNotKept = row.storageKey === null && (row.contentLength ?? 0) > 0;
      if (row.status === null || row.bodySkipped || bodyNotKept) {
        summary.skipped += 1;
        continue;
      }
      const body = row.storageKey === null ? Buffer.alloc(0) : await store.get(row.storageKey);
      if (body === null) {
        summary.missingBodies += 1;
        continue;
      }
      const notes: [string, string][] = [];
      const first = row.contentHash !== null && body.length > 0 ? known.get(row.contentHash) : undefined;
      let record: WrittenRecord;
      if (first !== undefined) {
        ({ revisit: record } = await writer.writeRevisit({
          url: row.url,
          fetchedAt: row.fetchedAt,
          refersTo: first,
          payloadDigest: first.payloadDigest,
          response: { status: row.status, headers: reconstructedHeaders(row) },
        }));
        summary.revisits += 1;
      } else {
        // A 304 confirmed the stored body at fetchedAt; its own 200 is not in the database.
        const status = row.status === 304 ? 200 : row.status;
        if (row.status === 304) notes.push(['revalidated', '304 Not Modified: the body is the stored copy the server confirmed']);
        if (row.duplicateKind === 'exact' && row.duplicateOfUrl) notes.push(['exact-duplicate-of', row.duplicateOfUrl]);
        ({ response: record } = await writer.writeExchange({
          url: row.url,
          fetchedAt: row.fetchedAt,
          response: { status, headers: reconstructedHeaders(row), body, bodyForm: 'decoded', truncated: row.truncated ?? false },
        }));
        summary.responses += 1;
        if (row.contentHash !== null && body.length > 0) {
          known.set(row.contentHash, { url: record.url, date: record.date, recordId: record.recordId, payloadDigest: record.payloadDigest ?? payloadDigest(body) });
        }
      }
      if (row.duplicateKind === 'near' && row.duplicateOfUrl) {
        notes.push(['near-duplicate-of', row.duplicateOfUrl]);
        if (row.duplicateDistance !== null && row.duplicateDistance !== undefined) notes.push(['simhash-distance', String(row.duplicateDistance)]);
      }
      if (notes.length > 0) {
        await writer.writeMetadata({ url: row.url, date: row.fetchedAt, fields: notes, concurrentTo: record.recordId });
        summary.metadata += 1;
      }
      if (await writeRenderedDom(writer, store, row, record)) summary.conversions += 1;
    }
  } finally {
    await writer.close();
  }
  return { files: writer.files, ...summary };
}

/**
 * A rendered page's DOM as a `conversion` record referring to the page's response (or revisit)
 * record, as the live crawl's writer archives it. False when the page was not rendered or the
 * store no longer has its DOM (the response is archived all the same).
 */
async function writeRenderedDom(writer: WarcWriter, store: BodySource, row: ExportRow, capture: WrittenRecord): Promise<boolean> {
  if (row.renderedKey === null || row.renderedKey === undefined) return false;
  const dom = await store.get(row.renderedKey);
  if (dom === null) return false;
  await writer.writeConversion({ url: row.url, date: row.fetchedAt, contentType: 'text/html; charset=utf-8', body: dom, refersTo: capture.recordId });
  return true;
}

/** What the database knows of the response's headers (the writer adds Content-Length for a body). */
function reconstructedHeaders(row: ExportRow): HttpHeaders {
  const headers: [string, string][] = [];
  if (row.contentType) headers.push(['Content-Type', row.charset ? `${row.contentType}; charset=${row.charset}` : row.contentType]);
  if (row.redirectTo) headers.push(['Location', row.redirectTo]);
  return headers;
}

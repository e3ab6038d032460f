import { createHash, randomUUID } from 'node:crypto';
import { Database, type PageRecord } from '../database.js';

/** Where tests find PostgreSQL: DATABASE_URL, else the standard local server. */
export const TEST_DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** A migrated schema of this test file's own, dropped by cleanup. */
export async function testDatabase(label = 'test'): Promise<{ db: Database; schema: string; cleanup: () => Promise<void> }> {
  const schema = `t_${label}_${randomUUID().slice(0, 8)}`.replace(/[^a-z0-9_]/g, '_');
  const db = new Database({ url: TEST_DATABASE_URL, schema, poolSize: 4, applicationName: `trawl-test-${label}` });
  await db.migrate();
  return {
    db,
    schema,
    async cleanup() {
      await db.dropSchema();
      await db.close();
    },
  };
}
export { discovered, fp, record } from './records.js';

/** A fetched page for crawled_pages: a 200 text/html with a body hash, fields overridable. */
export function pageRecord(url: string, overrides: Partial<PageRecord> = {}): PageRecord {
  return {
    hash: createHash('sha256').update(url).digest().subarray(0, 16),
    url,
    host: new URL(url).host,
    depth: 0,
    state: 'done',
    httpStatus: 200,
    contentType: 'text/html',
    contentHash: createHash('sha256').update(`body of ${url}`).digest('hex'),
    storageKey: null,
    fetchedAt: 1_700_000_000_000,
    contentLength: 20,
    truncated: false,
    fetchMs: 1,
    redirectTo: null,
    canonicalUrl: null,
    linksFound: 0,
    errorCode: null,
    errorMessage: null,
    changeFrequencyS: null,
    lastChangedAt: null,
    nextCrawlAt: null,
    etag: null,
    lastModified: null,
    charset: 'utf-8',
    noindex: false,
    nofollow: false,
    bodySkipped: false,
    ...overrides,
  };
}

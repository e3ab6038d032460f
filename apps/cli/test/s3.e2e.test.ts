import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@trawl/config';
import { Database } from '@trawl/db';
import { createContentStore } from '@trawl/store';
import { S3RVER_CREDENTIALS, startTestS3, type TestS3 } from '@trawl/store/testing';
import { TestWeb } from '@trawl/testweb';
import { readWarc } from '@trawl/warc/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASE_URL, dropNamespace, trawl, uniqueNamespace } from '../src/testing/index.js';

/**
 * The content store on S3 for real: `trawl crawl` with TRAWL_CONTENT_STORE=s3 against a real
 * S3-protocol server (s3rver), writing WARC files while it crawls; then `trawl export warc`
 * reads the bodies back from the bucket.
 */
const BUCKET = 'trawl-e2e';
let s3: TestS3;
let web: TestWeb;
let dir: string;
const namespaces: string[] = [];

beforeAll(async () => {
  s3 = await startTestS3([BUCKET]);
  web = await TestWeb.start({ hosts: 3, pagesPerHost: 10, linksPerPage: 3, crossHostLinks: 1, latencyMs: 1, seed: 12, baseAddress: '127.1.63.1' });
  dir = await mkdtemp(join(tmpdir(), 'trawl-s3-e2e-'));
});
afterAll(async () => {
  await web.stop();
  await s3.close();
  await rm(dir, { recursive: true, force: true });
  for (const ns of namespaces) await dropNamespace(ns);
});

const warcFiles = async (path: string): Promise<string[]> => (await readdir(path)).filter((f) => f.endsWith('.warc.gz')).map((f) => join(path, f));

describe('a crawl that stores its bodies in S3', () => {
  it('puts every body and text in the bucket, writes WARCs while crawling, and exports WARCs from the bucket', async () => {
    const namespace = uniqueNamespace('s3');
    namespaces.push(namespace);
    const env = {
      TRAWL_NAMESPACE: namespace,
      TRAWL_ALLOW_NETWORKS: '127.0.0.0/8',
      TRAWL_SCOPE: 'any',
      TRAWL_MIN_DELAY_MS: '10',
      TRAWL_CONTENT_STORE: 's3',
      TRAWL_S3_BUCKET: BUCKET,
      TRAWL_S3_PREFIX: `${namespace}/`,
      TRAWL_S3_ENDPOINT: s3.endpoint,
      TRAWL_S3_REGION: 'us-east-1',
      TRAWL_S3_FORCE_PATH_STYLE: 'true',
      AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
      TRAWL_WARC_WRITE: 'true',
      // Every page's text stored too, beside its body: both go to the bucket.
      TRAWL_CONTENT_STORE_TEXT: 'true',
      TRAWL_WARC_DIR: join(dir, 'crawl-warc'),
    };
    const crawl = trawl(['crawl', ...web.rootUrls(), '--json'], env);
    const { code } = await crawl.exited;
    expect(code, crawl.stderr()).toBe(0);
    expect((JSON.parse(crawl.stdout()) as { finished: string }).finished).toBe('complete');

    const db = new Database({ url: DATABASE_URL, schema: namespace });
    let pages: { url: string; storage_key: string | null; content_hash: string | null; text_key: string | null }[];
    try {
      ({ rows: pages } = await db.pool.query(`SELECT url, storage_key, content_hash, text_key FROM "${namespace}".crawled_pages WHERE http_status = 200`));
    } finally {
      await db.close();
    }
    expect(pages).toHaveLength(30);

    // Every body (and its text) is in the bucket, byte for byte what the web served.
    const store = createContentStore(loadConfig({ env }), s3.client);
    try {
      for (const page of pages) {
        expect(page.storage_key, page.url).toMatch(/^sha256:/);
        expect((await store.get(page.storage_key as string))?.toString(), page.url).toBe(web.htmlOf(page.url));
        expect((await store.get(page.text_key as string))?.toString().length, page.url).toBeGreaterThan(0);
      }
    } finally {
      await store.close();
    }
    // Bodies and texts, content-addressed: one object each (the scheduler's seen-set snapshots aside).
    expect(s3.countPuts({ except: `${namespace}/seen-snapshots/` })).toBe(new Set(pages.flatMap((p) => [p.storage_key, p.text_key])).size);

    // The crawl's own WARC: a response and its request per page, the request as the fetcher sent it.
    const written = (await Promise.all((await warcFiles(join(dir, 'crawl-warc'))).map(readWarc))).flat();
    expect(written.filter((r) => r.type === 'response').map((r) => r.url).sort()).toEqual(pages.map((p) => p.url).sort());
    const request = written.find((r) => r.type === 'request');
    expect(request?.record.httpHeaders?.headers.get('user-agent')).toMatch(/^trawl\//);
    expect(request?.header('WARC-Concurrent-To')).toMatch(/^<urn:uuid:/);

    // `trawl export warc` reads the bodies back from S3.
    const out = join(dir, 'export');
    const exported = trawl(['export', 'warc', '--out', out], env);
    expect((await exported.exited).code, exported.stderr()).toBe(0);
    const summary = JSON.parse(exported.stdout()) as { responses: number; missingBodies: number; files: string[] };
    expect(summary).toMatchObject({ responses: 30, missingBodies: 0 });
    const records = (await Promise.all(summary.files.map(readWarc))).flat().filter((r) => r.type === 'response');
    expect(records).toHaveLength(30);
    for (const record of records) expect(record.payload.toString(), record.url ?? '').toBe(web.htmlOf(record.url as string));
  }, 180_000);
});

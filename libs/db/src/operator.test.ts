import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database, PageRecord } from './database.js';
import { OperatorQueries } from './operator.js';
import { testDatabase } from './testing/index.js';

const fp = (url: string) => createHash('sha256').update(url).digest().subarray(0, 16);
const discovered = (url: string) => ({ hash: fp(url), url, host: new URL(url).host, depth: 1, from: null });
const page = (url: string, fetchedAt: number, overrides: Partial<PageRecord> = {}): PageRecord => ({
  hash: fp(url), url, host: new URL(url).host, depth: 1, state: 'done', httpStatus: 200, contentType: 'text/html', contentHash: 'c',
  storageKey: null, fetchedAt, contentLength: 10, truncated: false, fetchMs: 5, redirectTo: null, canonicalUrl: null, linksFound: 0,
  errorCode: null, errorMessage: null, changeFrequencyS: null, lastChangedAt: null, nextCrawlAt: null, etag: null, lastModified: null,
  charset: null, noindex: false, nofollow: false, bodySkipped: false, ...overrides,
});

let db: Database;
let ops: OperatorQueries;
let cleanup: () => Promise<void>;
beforeAll(async () => {
  ({ db, cleanup } = await testDatabase('operator'));
  ops = new OperatorQueries(db.pool, db.options.schema);
});
afterAll(() => cleanup());

describe('OperatorQueries', () => {
  it('keeps paused hosts (first pause wins) and forgets resumed ones', async () => {
    await ops.setPaused(['a.example', '*'], true, 'tok:1234');
    await ops.setPaused(['a.example'], true, 'tok:9999');
    expect((await ops.pausedHosts()).map((r) => [r.host, r.pausedBy])).toEqual([['*', 'tok:1234'], ['a.example', 'tok:1234']]);
    await ops.setPaused(['*'], false);
    expect((await ops.pausedHosts()).map((r) => r.host)).toEqual(['a.example']);
  });

  it('keeps each host\'s last rendering override, refuses an unknown mode, and forgets a cleared one', async () => {
    await ops.setRenderOverride('r.example', 'always', 'tok:1234');
    await ops.setRenderOverride('r.example', 'never', 'tok:9999');
    await ops.setRenderOverride('s.example', 'always');
    expect((await ops.renderOverrides()).map((r) => [r.host, r.mode, r.setBy])).toEqual([['r.example', 'never', 'tok:9999'], ['s.example', 'always', null]]);
    await expect(ops.setRenderOverride('r.example', 'sometimes' as 'always')).rejects.toThrow(/check constraint/);
    await ops.setRenderOverride('r.example', null);
    await ops.setRenderOverride('gone.example', null);
    expect((await ops.renderOverrides()).map((r) => r.host)).toEqual(['s.example']);
  });

  it('reads the oldest queued URL, a URL by fingerprint, and requeues it', async () => {
    expect(await ops.oldestQueuedAt()).toBeNull();
    const a = discovered('http://b.example/1');
    const b = discovered('http://b.example/2');
    await db.insertDiscovered([a, b]);
    await db.markQueued([a.hash]);
    const oldest = await ops.oldestQueuedAt();
    expect(oldest).not.toBeNull();
    expect(Math.abs((oldest as number) - Date.now())).toBeLessThan(60_000);
    expect(await ops.url(b.hash)).toEqual({ url: 'http://b.example/2', host: 'b.example', depth: 1, state: 'new' });
    expect(await ops.url(fp('http://nowhere/'))).toBeNull();
    await db.setState([b.hash], 'done');
    await ops.markRequeued(b.hash);
    expect((await ops.url(b.hash))?.state).toBe('queued');
    expect(await ops.hostUrlStates('b.example')).toEqual({ new: 0, queued: 2, done: 0, failed: 0, skipped: 0 });
    expect(await ops.knowsHost('b.example')).toBe(true);
    expect(await ops.knowsHost('zzz.example')).toBe(false);
  });

  it('lists a host\'s recent fetches newest first, and error codes by frequency', async () => {
    await db.recordPages([
      page('http://c.example/1', 1_700_000_000_000),
      page('http://c.example/2', 1_700_000_001_000, { state: 'failed', httpStatus: 500, errorCode: 'ERR_HTTP_5XX' }),
      page('http://c.example/3', 1_700_000_002_000, { state: 'failed', httpStatus: null, errorCode: 'ERR_FETCH_TIMEOUT', render: { rendered: true, reason: 'empty-app-root' } }),
      page('http://d.example/1', 1_700_000_003_000, { state: 'failed', httpStatus: 503, errorCode: 'ERR_HTTP_5XX' }),
    ]);
    const recent = await ops.recentFetches('c.example', 2);
    expect(recent.map((r) => r.url)).toEqual(['http://c.example/3', 'http://c.example/2']);
    expect(recent[1]).toMatchObject({ httpStatus: 500, errorCode: 'ERR_HTTP_5XX', fetchMs: 5, urlHash: fp('http://c.example/2').toString('hex'), rendered: false, renderReason: null });
    expect(recent[0]).toMatchObject({ rendered: true, renderReason: 'empty-app-root' });
    expect(await ops.errorCodes()).toEqual([{ code: 'ERR_HTTP_5XX', pages: 2 }, { code: 'ERR_FETCH_TIMEOUT', pages: 1 }]);
  });
});

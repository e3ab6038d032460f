import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@trawl/config';
import { deleteByPrefix } from '@trawl/redis';
import { Runtime } from '@trawl/runtime';
import { silentLogger } from '@trawl/telemetry';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { takeSeenSnapshot } from './compose.js';
import { rebuildFromDatabase } from './rebuild.js';

/**
 * The seen-set's snapshots on a real runtime (Redis, PostgreSQL, the content directory): the
 * scheduler's sweep takes one, Redis loses the crawl, and the rebuild loads it and adds only the
 * URLs recorded after it. Judged from the filter: every URL PostgreSQL knows is "maybe seen".
 */
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const namespace = `t_seensnap_${randomBytes(4).toString('hex')}`;
let contentDir: string;
let runtime: Runtime;

const fingerprint = (url: string): Buffer => createHash('sha256').update(url).digest().subarray(0, 16);
const urlsOf = (from: number, count: number): string[] => Array.from({ length: count }, (_, i) => `http://h${(from + i) % 37}.example/p${from + i}`);

/** Discovery as the crawl does it: the filter first, then the row in `urls`. */
async function discover(urls: readonly string[]): Promise<void> {
  await runtime.seen.bloom.addIfNew(urls.map(fingerprint));
  await runtime.db.insertDiscovered(urls.map((url) => ({ hash: fingerprint(url), url, host: new URL(url).host, depth: 1, from: null })));
}

beforeAll(async () => {
  contentDir = await mkdtemp(join(tmpdir(), 'trawl-seensnap-'));
  const config = loadConfig({
    env: { TRAWL_NAMESPACE: namespace, TRAWL_SEEN_BACKEND: 'lua', TRAWL_SEEN_CAPACITY: '1000', TRAWL_SEEN_SHARDS: '2', TRAWL_CONTENT_DIR: contentDir, TRAWL_SEEN_SNAPSHOT_KEEP: '2' },
  });
  runtime = await Runtime.open({ config, redisUrl: REDIS_URL, databaseUrl: DATABASE_URL, logger: silentLogger, role: 'test' });
  expect((await runtime.intact()).ok).toBe(true);
});

afterAll(async () => {
  await deleteByPrefix(runtime.redis, namespace);
  await runtime.db.pool.query(`DROP SCHEMA IF EXISTS "${namespace}" CASCADE`);
  await runtime.close();
  await rm(contentDir, { recursive: true, force: true });
});

describe('seen-set snapshots in a rebuild', () => {
  it('the rebuild loads the newest snapshot and adds only the URLs recorded after it; every URL is seen afterwards', async () => {
    const before = urlsOf(0, 1500);
    await discover(before);
    const taken = await takeSeenSnapshot(runtime);
    expect(taken).toMatchObject({ coversUrlId: await runtime.db.maxUrlId() });
    // In the content directory, under the namespace, with a manifest.
    expect(await readdir(join(contentDir, 'seen-snapshots', namespace, String(taken.id)))).toContain('manifest.json');
    const after = urlsOf(1500, 200);
    await discover(after);

    // Redis loses the crawl.
    await deleteByPrefix(runtime.redis, namespace);
    expect((await runtime.intact()).ok).toBe(false);
    const added = vi.spyOn(runtime.seen.bloom, 'addIfNew');
    const report = await rebuildFromDatabase(runtime, silentLogger, { batch: 250 });
    expect(report).toMatchObject({ rows: 1700, seen: 200, seenSnapshot: taken.id, seenFromUrlId: taken.coversUrlId });
    // Exactly the later URLs went into the filter.
    const given = new Set(added.mock.calls.flatMap(([fps]) => fps.map((fp) => fp.toString('hex'))));
    added.mockRestore();
    expect(given).toEqual(new Set(after.map((url) => fingerprint(url).toString('hex'))));
    // None missing: every URL PostgreSQL knows is in the filter, and the frontier has them all.
    const all = [...before, ...after].map(fingerprint);
    expect((await runtime.seen.bloom.mightContain(all)).every(Boolean)).toBe(true);
    expect((await runtime.frontier.stats()).queued).toBe(1700);
    expect((await runtime.intact()).ok).toBe(true);
  });

  it('without a usable snapshot the rebuild adds every URL, as before', async () => {
    // The snapshots are gone (or unreadable): the rebuild falls back.
    await rm(join(contentDir, 'seen-snapshots'), { recursive: true, force: true });
    await deleteByPrefix(runtime.redis, namespace);
    const report = await rebuildFromDatabase(runtime, silentLogger, { batch: 500 });
    expect(report).toMatchObject({ rows: 1700, seen: 1700, seenSnapshot: null, seenFromUrlId: 0 });
    expect((await runtime.seen.bloom.mightContain(urlsOf(0, 1700).map(fingerprint))).every(Boolean)).toBe(true);
  });

  it('keeps the newest TRAWL_SEEN_SNAPSHOT_KEEP snapshots', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 4; i += 1) ids.push(String((await takeSeenSnapshot(runtime, Date.now() + i)).id));
    expect((await readdir(join(contentDir, 'seen-snapshots', namespace))).sort()).toEqual(ids.slice(2).sort());
  });
});

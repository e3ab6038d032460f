import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@trawl/config';
import { deleteByPrefix } from '@trawl/redis';
import { Runtime } from '@trawl/runtime';
import { TEST_REDISBLOOM_URL } from '@trawl/seen/testing';
import { createNamedObjects } from '@trawl/store';
import { startTestS3, type TestS3 } from '@trawl/store/testing';
import { silentLogger } from '@trawl/telemetry';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { takeSeenSnapshot } from './compose.js';
import { rebuildFromDatabase } from './rebuild.js';

/**
 * The seen-set's snapshots on a real runtime (Redis, PostgreSQL, the content store): the
 * scheduler's sweep takes one, Redis loses the crawl, and the rebuild loads it and adds only the
 * URLs recorded after it. Judged from the filter: every URL PostgreSQL knows is "maybe seen".
 * Once with the Lua bitmap filter and the local content directory, once with RedisBloom (the
 * test server with the module) and S3 (s3rver on loopback).
 */
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const BUCKET = 'trawl-seen-snapshots';

const fingerprint = (url: string): Buffer => createHash('sha256').update(url).digest().subarray(0, 16);
const urlsOf = (from: number, count: number): string[] => Array.from({ length: count }, (_, i) => `http://h${(from + i) % 37}.example/p${from + i}`);

interface Setup {
  name: string;
  redisUrl: string;
  env: (s3: TestS3, contentDir: string) => Record<string, string>;
  s3: boolean;
}
const setups: Setup[] = [
  { name: 'Lua bitmap filter, local content directory', redisUrl: REDIS_URL, s3: false, env: (_, dir) => ({ TRAWL_SEEN_BACKEND: 'lua', TRAWL_CONTENT_DIR: dir }) },
  {
    name: 'RedisBloom, S3',
    redisUrl: TEST_REDISBLOOM_URL,
    s3: true,
    env: (s3, dir) => ({ TRAWL_SEEN_BACKEND: 'redisbloom', TRAWL_CONTENT_DIR: dir, TRAWL_CONTENT_STORE: 's3', TRAWL_S3_BUCKET: BUCKET, TRAWL_S3_PREFIX: 'crawl', TRAWL_S3_ENDPOINT: s3.endpoint, TRAWL_S3_FORCE_PATH_STYLE: 'true' }),
  },
];

for (const setup of setups) {
  describe(`seen-set snapshots in a rebuild: ${setup.name}`, () => {
    const namespace = `t_seensnap_${randomBytes(4).toString('hex')}`;
    let contentDir: string;
    let s3: TestS3;
    let runtime: Runtime;

    /** Discovery as the crawl does it: the filter first, then the row in `urls`. */
    async function discover(urls: readonly string[]): Promise<void> {
      await runtime.seen.bloom.addIfNew(urls.map(fingerprint));
      await runtime.db.insertDiscovered(urls.map((url) => ({ hash: fingerprint(url), url, host: new URL(url).host, depth: 1, from: null })));
    }

    beforeAll(async () => {
      contentDir = await mkdtemp(join(tmpdir(), 'trawl-seensnap-'));
      s3 = await startTestS3([BUCKET]);
      const config = loadConfig({ env: { TRAWL_NAMESPACE: namespace, TRAWL_SEEN_CAPACITY: '1000', TRAWL_SEEN_SHARDS: '2', TRAWL_SEEN_SNAPSHOT_KEEP: '2', ...setup.env(s3, contentDir) } });
      runtime = await Runtime.open({ config, redisUrl: setup.redisUrl, databaseUrl: DATABASE_URL, logger: silentLogger, role: 'test' });
      // s3rver's fixed credentials: the first call builds the store every later one uses.
      if (setup.s3) runtime.seenSnapshots(s3.client);
      expect(runtime.seen.bloom.backend).toBe(setup.s3 ? 'redisbloom' : 'lua-bitmap');
      expect((await runtime.intact()).ok).toBe(true);
    });

    afterAll(async () => {
      await deleteByPrefix(runtime.redis, namespace);
      await runtime.db.pool.query(`DROP SCHEMA IF EXISTS "${namespace}" CASCADE`);
      await runtime.close();
      await s3.close();
      await rm(contentDir, { recursive: true, force: true });
    });

    it('the rebuild loads the newest snapshot and adds only the URLs recorded after it; every URL is seen afterwards', async () => {
      const before = urlsOf(0, 1500);
      await discover(before);
      const taken = await takeSeenSnapshot(runtime);
      expect(taken).toMatchObject({ coversUrlId: await runtime.db.maxUrlId() });
      expect(await runtime.seenSnapshots().list()).toEqual([taken.id]);
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

    it('keeps the newest TRAWL_SEEN_SNAPSHOT_KEEP snapshots, and the sweep skips while the newest is younger than half its interval', async () => {
      const ids: string[] = [];
      const t0 = Date.now() + 1000;
      for (let i = 0; i < 4; i += 1) ids.push(String((await takeSeenSnapshot(runtime, t0 + i)).id));
      expect(await runtime.seenSnapshots().list()).toEqual(ids.slice(2).reverse());
      expect(await takeSeenSnapshot(runtime, t0 + 149_000, 150_000)).toMatchObject({ skipped: 'the newest snapshot is 149 s old' });
      expect(await takeSeenSnapshot(runtime, t0 + 151_000, 150_000)).toHaveProperty('id');
    });

    it('without a usable snapshot (every manifest torn) the rebuild adds every URL, as before', async () => {
      const objects = createNamedObjects(runtime.config, 'seen-snapshots', s3.client);
      const ids = await runtime.seenSnapshots().list();
      expect(ids.length).toBeGreaterThan(0);
      for (const id of ids) await objects.put(`${namespace}/${id}/manifest.json`, Buffer.from('{"format": 1, "id": '));
      objects.close();
      await deleteByPrefix(runtime.redis, namespace);
      const report = await rebuildFromDatabase(runtime, silentLogger, { batch: 500 });
      expect(report).toMatchObject({ rows: 1700, seen: 1700, seenSnapshot: null, seenFromUrlId: 0 });
      expect((await runtime.seen.bloom.mightContain(urlsOf(0, 1700).map(fingerprint))).every(Boolean)).toBe(true);
    });
  });
}

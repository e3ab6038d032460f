import { Database } from '@trawl/db';
import { createRedis } from '@trawl/redis';
import { TestWeb } from '@trawl/testweb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completeAndPolite, crawlVerdict, DATABASE_URL, dropNamespace, PrivatePostgres, PrivateRedis, REDIS_URL, runChaos, trawl, uniqueNamespace } from '../src/testing/index.js';

/**
 * A frontier larger than its Redis cap, as users run it: `trawl crawl` of a 40 × 60 synthetic web
 * with TRAWL_FRONTIER_REDIS_MAX_URLS=50, against real Redis and PostgreSQL. Most queued URLs wait
 * in PostgreSQL and are refilled as their hosts run low. Judged from the web's request log:
 * every page once, politely; Redis held the cap plus the hosts' heads at most.
 */
const HOSTS = 40;
const PAGES = 60;
const PARTITIONS = 4;
const CAP = 50;
const HEAD = 2;
const namespace = uniqueNamespace('spill');
const redis = createRedis(REDIS_URL);
const db = new Database({ url: DATABASE_URL, schema: namespace });
let web: TestWeb;

beforeAll(async () => {
  web = await TestWeb.start({ hosts: HOSTS, pagesPerHost: PAGES, linksPerPage: 4, crossHostLinks: 2, latencyMs: { min: 1, max: 5 }, seed: 11 });
});

afterAll(async () => {
  await web.stop();
  await db.close();
  redis.disconnect();
  await dropNamespace(namespace);
});

/** The frontier's counters summed over partitions: URLs queued in Redis, and spilled to PostgreSQL. */
async function frontierCounts(client = redis, ns = namespace): Promise<{ queued: number; spilled: number }> {
  const replies = await Promise.all(Array.from({ length: PARTITIONS }, (_, p) => client.hmget(`${ns}:{p${p}}:stats`, 'queued', 'spilled')));
  return replies.reduce((sum, [queued, spilled]) => ({ queued: sum.queued + Number(queued ?? 0), spilled: sum.spilled + Number(spilled ?? 0) }), { queued: 0, spilled: 0 });
}

describe('a crawl whose frontier spills to PostgreSQL', () => {
  it('fetches every page once, politely, with at most the cap plus the hosts’ heads in Redis', async () => {
    const delay = 100;
    const env = {
      TRAWL_NAMESPACE: namespace,
      TRAWL_ALLOW_NETWORKS: '127.0.0.0/8',
      TRAWL_CONCURRENCY: '32',
      TRAWL_PARTITIONS: String(PARTITIONS),
      TRAWL_MIN_DELAY_MS: String(delay),
      TRAWL_RECRAWL: 'false',
      TRAWL_FRONTIER_REDIS_MAX_URLS: String(CAP),
      TRAWL_FRONTIER_HOST_HEAD_URLS: String(HEAD),
      TRAWL_CONTENT_DIR: `.trawl/test-content/${namespace}`,
    };
    const seeds = web.rootUrls();
    const crawl = trawl(['crawl', ...seeds, '--json'], env);
    // Sample the frontier while it crawls: how much sat in Redis, how much waited in PostgreSQL.
    let peakQueued = 0;
    let peakSpilled = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const { queued, spilled } = await frontierCounts();
        peakQueued = Math.max(peakQueued, queued);
        peakSpilled = Math.max(peakSpilled, spilled);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    try {
      const { code } = await crawl.exited;
      expect(code, crawl.stderr()).toBe(0);
    } finally {
      sampling = false;
      await sampler;
      if (crawl.child.exitCode === null) crawl.child.kill('SIGTERM');
    }
    const summary = JSON.parse(crawl.stdout()) as { finished: string; fetched: number };
    expect(summary.finished).toBe('complete');

    await web.idle();
    expect(crawlVerdict(web, seeds, delay)).toEqual(completeAndPolite(HOSTS * PAGES));

    // The cap held: Redis had the cap plus each host's head (and the URLs that outrank their
    // host's lowest while it holds under twice its head) at most; PostgreSQL held the rest.
    expect(peakSpilled).toBeGreaterThan(HOSTS * PAGES / 4);
    expect(peakQueued).toBeLessThanOrEqual(CAP + PARTITIONS + HOSTS * 2 * HEAD);
    // Nothing is left waiting in PostgreSQL, and every URL was recorded once.
    const { rows } = await db.pool.query<{ spilled: string; done: string }>(
      `SELECT count(*) FILTER (WHERE spill_band IS NOT NULL) AS spilled, count(*) FILTER (WHERE state = 'done') AS done FROM "${namespace}".urls`,
    );
    expect(rows[0]).toEqual({ spilled: '0', done: String(HOSTS * PAGES) });
    expect(await frontierCounts()).toEqual({ queued: 0, spilled: 0 });
  }, 300_000);
});

describe('trawl frontier rebuild of a frontier that spills', () => {
  let privateRedis: PrivateRedis;
  let postgres: PrivatePostgres;
  beforeAll(async () => {
    [privateRedis, postgres] = await Promise.all([PrivateRedis.start(), PrivatePostgres.start()]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([privateRedis?.stop(), postgres?.stop()]);
  });

  it('Redis wiped mid-crawl, then `trawl frontier rebuild`: the spilled URLs come back from PostgreSQL, nothing lost, nothing fetched twice but what the wipe explains', async () => {
    const client = createRedis(privateRedis.url);
    // The chaos harness's namespace is its own: sample every namespace's partitions on this private Redis.
    let peakSpilled = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const keys = await client.keys('*:{p*}:stats');
        for (const key of keys) peakSpilled = Math.max(peakSpilled, Number((await client.hget(key, 'spilled')) ?? 0));
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    try {
      const r = await runChaos({
        fault: 'wipe-redis',
        redis: privateRedis,
        postgres,
        hosts: 30,
        pages: 15,
        delayMs: 300,
        workers: 1,
        timeoutMs: 200_000,
        env: { TRAWL_PARTITIONS: '2', TRAWL_FRONTIER_REDIS_MAX_URLS: '50', TRAWL_FRONTIER_HOST_HEAD_URLS: '2' },
      });
      expect(r.lost).toEqual([]);
      expect(r.notRecorded).toEqual([]);
      expect(r.politenessViolations, r.politenessSample.join('\n')).toBe(0);
      // Only pages handed off before the wipe and not yet recorded are fetched again, each once.
      expect(r.fetchedTwice.filter((d) => d.explained === null)).toEqual([]);
      expect(r.fetchedTwice.every((d) => d.fetches.length === 2)).toBe(true);
      expect(r.events.some((e) => /trawl frontier rebuild: \d+ rows/.test(e))).toBe(true);
    } finally {
      sampling = false;
      await sampler;
      client.disconnect();
    }
    // The partition's share of the cap is 25: most of the crawl's queue waited in PostgreSQL.
    expect(peakSpilled).toBeGreaterThan(50);
  }, 300_000);
});

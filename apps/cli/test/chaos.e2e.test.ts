import { Database } from '@trawl/db';
import { PartitionOwnership } from '@trawl/dispatch';
import { FetchQueues } from '@trawl/queue';
import { createRedis, type Redis } from '@trawl/redis';
import { fingerprint } from '@trawl/url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CHAOS_HEADERS,
  type ChaosFault,
  type ChaosResult,
  chaosRow,
  PrivatePostgres,
  PrivateRedis,
  runChaos,
  trawl,
  uniqueNamespace,
  waitFor,
} from '../src/testing/index.js';

/**
 * Complete, once, and nothing lost — under faults. Each case crawls a 30 × 15 synthetic web with
 * `trawl crawl` and two `trawl worker` processes on a private Redis (AOF on) and a private
 * PostgreSQL, strikes once a third of the pages are fetched, and is judged from the web's request
 * log and from PostgreSQL: every page fetched and recorded `done` (0 lost), politely, and fetched
 * twice only where a process died between a fetch and its record (each such page is traced to
 * the process that fetched it and died). The long version of this table (100 × 30) is
 * `npm run bench -- chaos`, in BENCHMARKS.md.
 */
let redis: PrivateRedis;
let postgres: PrivatePostgres;
let client: Redis;
const results: ChaosResult[] = [];

beforeAll(async () => {
  [redis, postgres] = await Promise.all([PrivateRedis.start(), PrivatePostgres.start()]);
  client = createRedis(redis.url);
}, 60_000);

afterAll(async () => {
  if (results.length > 0) {
    console.log(`\n| ${CHAOS_HEADERS.join(' | ')} |\n${results.map((r) => `| ${chaosRow(r).join(' | ')} |`).join('\n')}`);
  }
  client?.disconnect();
  await Promise.all([redis?.stop(), postgres?.stop()]);
});

async function chaos(fault: ChaosFault, extra: Partial<Parameters<typeof runChaos>[0]> = {}): Promise<ChaosResult> {
  const result = await runChaos({ fault, redis, postgres, hosts: 30, pages: 15, delayMs: 300, workers: 2, timeoutMs: 150_000, log: (line) => console.log(line), ...extra });
  results.push(result);
  for (const d of result.fetchedTwice) console.log(`[chaos ${fault}] fetched twice: ${d.url} ${JSON.stringify(d.fetches)} — ${d.explained ?? 'UNEXPLAINED'}`);
  expect(result.lost).toEqual([]);
  expect(result.politenessViolations, result.politenessSample.join('\n')).toBe(0);
  expect(result.fetchedTwice.filter((d) => d.explained === null)).toEqual([]);
  return result;
}

describe('chaos: a crawl under faults loses nothing and fetches each page once', () => {
  it('(a) a random worker SIGKILLed every 2 s, and started again', async () => {
    const r = await chaos('kill-workers', { killEveryMs: 2000, at: 0.15 });
    expect(r.deaths.length).toBeGreaterThanOrEqual(2);
  }, 200_000);

  it('(a2) the stages apart: a random process-only worker SIGKILLed every 2 s (up to 3 times), and started again; nothing is fetched twice', async () => {
    const r = await chaos('kill-processors', { killEveryMs: 2000, maxKills: 3, at: 0.05 });
    expect(r.deaths.length).toBeGreaterThanOrEqual(2);
    // A process stage never fetches: its pages are processed again from their stored bodies.
    expect(r.fetchedTwice).toEqual([]);
  }, 200_000);

  it('(b) Redis restarted mid-crawl (AOF on)', async () => {
    const r = await chaos('restart-redis');
    expect(r.fetchedTwice).toEqual([]);
  }, 200_000);

  it('(c) PostgreSQL restarted mid-crawl', async () => {
    const r = await chaos('restart-postgres');
    expect(r.fetchedTwice).toEqual([]);
  }, 200_000);

  it('(d) Redis wiped mid-crawl (FLUSHALL), then trawl frontier rebuild', async () => {
    const r = await chaos('wipe-redis');
    // Only pages handed off before the wipe and not yet recorded (their process-stream entries
    // went with Redis) are fetched again, each once.
    expect(r.fetchedTwice.filter((d) => d.explained === null)).toEqual([]);
    expect(r.fetchedTwice.every((d) => d.fetches.length === 2)).toBe(true);
    expect(r.events.some((e) => /trawl frontier rebuild: \d+ rows, [1-9]\d* URLs queued again/.test(e))).toBe(true);
  }, 200_000);

  it('(d2) Redis wiped mid-crawl (FLUSHALL) with TRAWL_AUTO_REBUILD: no command, and the wipe silences the crawl at most 10 s', async () => {
    const r = await chaos('wipe-redis', { autoRebuild: true });
    expect(r.fetchedTwice.filter((d) => d.explained === null)).toEqual([]);
    expect(r.fetchedTwice.every((d) => d.fetches.length === 2)).toBe(true);
    // The stretch the wipe caused (a busy machine can stall a crawl elsewhere too: longestSilenceMs).
    expect(r.wipeSilenceMs).toBeLessThanOrEqual(10_000);
  }, 200_000);

  it('(d3) the same with the default fetch timeouts: the workers abort their fetches and say so, so the rebuild does not wait for the 60 s deadline', async () => {
    const r = await chaos('wipe-redis', { autoRebuild: true, defaultTimeouts: true });
    expect(r.fetchedTwice.filter((d) => d.explained === null)).toEqual([]);
    // Without the workers' word it would be the fetch deadline and its margin (65 s) at least.
    expect(r.wipeSilenceMs).toBeLessThanOrEqual(10_000);
  }, 200_000);

  it('(e) the content disk fills: the crawl stops with the message (exit 1), and after the fix resumes and completes', async () => {
    await chaos('disk-full', { diskBytes: { small: 160 * 1024, fixed: 64 * 1024 * 1024 }, at: 0.05 });
  }, 200_000);
});

describe('a scheduler on a namespace whose Redis data is gone', () => {
  it('says exactly what to run, dispatches nothing, and starts once trawl frontier rebuild has run', async () => {
    const namespace = uniqueNamespace('wiped');
    // A short fetch deadline: restored hosts are due the fetch hold (deadline + 5 s) after the rebuild.
    const env = { REDIS_URL: redis.url, DATABASE_URL: postgres.url, TRAWL_NAMESPACE: namespace, TRAWL_SCHEDULER_LEASE_MS: '900', TRAWL_FETCH_DEADLINE_MS: '1000', TRAWL_LOG_LEVEL: 'warn' };
    // PostgreSQL remembers a crawl (two queued URLs); Redis knows nothing of it.
    const db = new Database({ url: postgres.url, schema: namespace });
    await db.migrate();
    const urls = ['http://wiped-a.example/', 'http://wiped-b.example/'];
    await db.insertDiscovered(urls.map((url) => ({ hash: fingerprint(url), url, host: new URL(url).host, depth: 0, from: null })));
    await db.markQueued(urls.map(fingerprint));
    const scheduler = trawl(['scheduler'], env);
    const ownership = new PartitionOwnership(client, namespace, '', 1);
    try {
      await waitFor(() => scheduler.stderr().includes(`trawl frontier rebuild --namespace ${namespace}`), 30_000, 'the scheduler to say what to run');
      await new Promise((r) => setTimeout(r, 1500));
      expect(await ownership.owner(0)).toBeNull(); // nothing dispatched: no partition taken
      const rebuild = trawl(['frontier', 'rebuild'], env);
      expect((await rebuild.exited).code, rebuild.stderr()).toBe(0);
      expect(JSON.parse(rebuild.stdout())).toMatchObject({ rows: 2, queued: 2, seeds: 2 });
      await waitFor(async () => (await ownership.owner(0)) !== null, 10_000, 'the scheduler to dispatch again');
      // Both URLs were dispatched as fetch jobs (no worker runs here to take them).
      const queues = new FetchQueues(client, { namespace, partitions: 1, attempts: 1 });
      await waitFor(async () => (await queues.counts()).waiting === 2, 20_000, 'the two URLs to be dispatched');
      await queues.close();
    } finally {
      scheduler.child.kill('SIGTERM');
      await scheduler.exited;
      await db.dropSchema();
      await db.close();
    }
  }, 90_000);
});

describe('a lease that does not outlast the fetch deadline', () => {
  it('stops the process at start (exit 2), naming both settings', async () => {
    const proc = trawl(['worker'], { TRAWL_LEASE_MS: '6000', TRAWL_FETCH_DEADLINE_MS: '2000' });
    const { code } = await proc.exited;
    expect(code).toBe(2);
    expect(proc.stderr()).toMatch(/TRAWL_LEASE_MS \(worker\.leaseMs\): must be longer than TRAWL_FETCH_DEADLINE_MS \(2000 ms\) plus 5000 ms/);
  }, 30_000);
});

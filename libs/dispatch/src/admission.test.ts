import { ManualClock } from '@trawl/core';
import { Admission, Frontier, type PushItem } from '@trawl/frontier';
import { type SeedsJobData, SeedsQueue, SeedsWorker } from '@trawl/queue';
import { testConnection, testRedis } from '@trawl/redis/testing';
import { silentLogger } from '@trawl/telemetry';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { SeedsAdmission } from './admission.js';

// Seed admission at the seeds queue: above TRAWL_FRONTIER_MAX_QUEUED the scheduler's consumer
// takes no job (they wait, as bull-board shows them); once the frontier drains below 90 % of it,
// the watcher resumes it.
const t = testRedis('seeds_admission');
const blocking = testConnection({ blocking: true });
afterAll(async () => {
  blocking.disconnect();
  await t.cleanup();
});

let run = 0;
let clock: ManualClock;
beforeEach(() => {
  run += 1;
  clock = new ManualClock(5_000_000);
});

const seedItem = (url: string): PushItem => ({ host: new URL(url).host, url, depth: 0, hops: 0, flags: 0, priority: 0.5 });
const urls = (job: string, n: number): string[] => Array.from({ length: n }, (_, i) => `http://${job}-${i}.example/`);

async function setup(maxQueued: number) {
  const namespace = `${t.prefix}_${run}`;
  const frontier = new Frontier(t.redis, { prefix: namespace, partitions: 2, bands: 4, leaseMs: 60_000, fetchHoldMs: 30_000, busyRetryMs: 500, maxUrlsPerHost: 0, clock });
  const admission = new Admission(t.redis, frontier, { prefix: namespace, maxQueued, clock });
  const queue = new SeedsQueue(t.redis, namespace);
  const processed: string[] = [];
  // Stands in for addSeeds: the job's URLs go straight into the frontier.
  const worker = new SeedsWorker(
    blocking,
    namespace,
    async (data: SeedsJobData, jobId) => {
      processed.push(jobId);
      await frontier.push(data.urls.map(seedItem));
      return { enqueued: data.urls.length, already_seen: 0 };
    },
    undefined,
    { admit: async () => (await admission.check({ setsThreshold: true })).state === 'admitting' },
  );
  const watcher = new SeedsAdmission({ check: () => admission.check({ setsThreshold: true }), seeds: worker, logger: silentLogger }, { everyMs: 1000 });
  void worker.run();
  await worker.ready();
  /** Claims URLs (as a dispatcher would) until `left` are queued. */
  const drainTo = async (left: number): Promise<void> => {
    for (let p = 0; (await frontier.queuedCount()) > left; p = (p + 1) % 2) await frontier.claim(p, 1);
  };
  const close = async (): Promise<void> => {
    await worker.close();
    await queue.close();
  };
  return { frontier, admission, queue, worker, watcher, processed, drainTo, close };
}

/** Long enough for a running worker to have taken a waiting job (it takes one in milliseconds). */
const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 400));

describe('seed admission at the seeds queue', () => {
  it('takes no seeds job above the threshold, and resumes once the frontier is below 90 % of it', async () => {
    const s = await setup(10);
    try {
      const first = await s.queue.add({ urls: urls('a', 10) });
      expect(await s.queue.wait(first, 10_000)).toMatchObject({ state: 'completed' });
      // The first job brought the frontier to the threshold: the consumer paused itself.
      expect(s.worker.paused).toBe(true);
      const second = await s.queue.add({ urls: urls('b', 5) });
      await settle();
      expect(await s.queue.queue.getJobState(second)).toBe('waiting');
      expect(s.processed).toEqual([first]);

      expect(await s.watcher.tick()).toMatchObject({ state: 'paused', queued: 10, maxQueued: 10, resumeBelow: 9 });
      // 9 is not below the resume mark (90 % of 10): still paused.
      await s.drainTo(9);
      clock.advance(1000);
      expect(await s.watcher.tick()).toMatchObject({ state: 'paused', queued: 9 });
      await settle();
      expect(await s.queue.queue.getJobState(second)).toBe('waiting');

      await s.drainTo(8);
      clock.advance(1000);
      expect(await s.watcher.tick()).toMatchObject({ state: 'admitting', queued: 8, since: clock.now() });
      expect(s.worker.paused).toBe(false);
      expect(await s.queue.wait(second, 10_000)).toMatchObject({ state: 'completed', result: { enqueued: 5 } });
      expect(s.processed).toEqual([first, second]);
    } finally {
      await s.close();
    }
  });

  it('puts a job it took back in the waiting list when the frontier filled up meanwhile', async () => {
    const s = await setup(10);
    try {
      // Something else (discovery, another scheduler) filled the frontier; no watcher has looked yet.
      await s.frontier.push(urls('x', 12).map(seedItem));
      expect(s.worker.paused).toBe(false);
      const job = await s.queue.add({ urls: urls('c', 3) });
      await settle();
      expect(await s.queue.queue.getJobState(job)).toBe('waiting');
      expect(s.processed).toEqual([]);
      expect(s.worker.paused).toBe(true);
      expect(await s.queue.counts()).toMatchObject({ waiting: 1, active: 0, failed: 0 });

      await s.drainTo(5);
      await s.watcher.tick();
      expect(await s.queue.wait(job, 10_000)).toMatchObject({ state: 'completed', result: { enqueued: 3 } });
    } finally {
      await s.close();
    }
  });

  it('with a threshold of 0 never pauses', async () => {
    const s = await setup(0);
    try {
      await s.frontier.push(urls('y', 50).map(seedItem));
      const job = await s.queue.add({ urls: urls('d', 2) });
      expect(await s.queue.wait(job, 10_000)).toMatchObject({ state: 'completed' });
      expect(await s.watcher.tick()).toMatchObject({ state: 'admitting', queued: 52 });
    } finally {
      await s.close();
    }
  });
});

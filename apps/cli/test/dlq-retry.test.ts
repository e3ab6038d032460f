import { ManualClock } from '@trawl/core';
import { Frontier, type GateDecision, type Lease } from '@trawl/frontier';
import { decodeFetchJob, type FetchJobContext, FetchQueues, FetchWorker, type JobResult } from '@trawl/queue';
import { createRedis } from '@trawl/redis';
import { afterAll, describe, expect, it } from 'vitest';
import { dropNamespace, REDIS_URL, trawl, uniqueNamespace, waitFor } from '../src/testing/index.js';

/**
 * `trawl dlq retry` against the real frontier scripts. A dead letter whose lease expired while
 * the job was failing carries a tombstoned lease id; the host gate drops such a job as stale, so
 * a re-run under that id would vanish unfetched. The re-run carries a fresh lease id instead,
 * which the gate adopts.
 */
const namespace = uniqueNamespace('dlq');
const redis = createRedis(REDIS_URL);
const blocking = createRedis(REDIS_URL, { blocking: true });
afterAll(async () => {
  blocking.disconnect();
  redis.disconnect();
  await dropNamespace(namespace);
});

const LEASE_MS = 10_000;
const clock = new ManualClock(Date.now());
const frontier = new Frontier(redis, { prefix: namespace, partitions: 1, bands: 4, leaseMs: LEASE_MS, fetchHoldMs: 5000, busyRetryMs: 250, maxUrlsPerHost: 0, clock });
const queues = new FetchQueues(redis, { namespace, partitions: 1, attempts: 2 });
afterAll(() => queues.close());

/** The pipeline's first step, as the crawl runs it: the host gate, with the job's lease id. */
const gate = (job: FetchJobContext): Promise<GateDecision> =>
  frontier.acquire({
    partition: job.job.partition,
    host: job.job.host,
    leaseId: job.job.leaseId ?? `job-${job.id}`,
    token: job.token,
    band: job.job.band,
    entry: { url: job.job.url, depth: job.job.depth, hops: job.job.hops, flags: job.job.flags },
  });

async function runWorker(handler: (job: FetchJobContext) => Promise<JobResult>, until: () => Promise<boolean>): Promise<void> {
  const worker = new FetchWorker(blocking, { namespace, partition: 0, concurrency: 1, stalledMs: 5000, jobs: queues.options }, handler);
  void worker.run();
  try {
    await waitFor(until, 15_000, 'the queue to settle');
  } finally {
    await worker.close();
  }
}

describe('trawl dlq retry', () => {
  it('re-runs a dead letter whose lease was tombstoned under a fresh lease id, and the gate adopts it', async () => {
    const url = 'http://dlq.example/page';
    await frontier.push([{ url, host: 'dlq.example', depth: 1, hops: 0, flags: 0, priority: 0.5 }]);
    const [lease] = (await frontier.claim(0, 1)).leases as [Lease];
    await queues.addLeased(0, [decodeFetchJob({ u: lease.url, h: lease.host, p: 0, d: lease.depth, x: 0, f: 0, b: lease.band, l: lease.id })]);

    // The attempt fails for good (dead-lettered) ...
    await runWorker(
      async (job) => ((await gate(job)).kind === 'ok' ? { outcome: 'dead', reason: 'ERR_HTTP_5XX: HTTP 503 (after 2 attempts)' } : { outcome: 'stale' }),
      async () => (await queues.counts()).failed === 1,
    );
    // ... after its lease had expired: the URL went back to the frontier and the lease id left a tombstone.
    clock.advance(LEASE_MS + 1);
    expect((await frontier.claim(0, 0)).expired).toBe(1);
    const oldTicket = { partition: 0, host: lease.host, leaseId: lease.id, token: 'probe', band: lease.band, entry: { url, depth: 1, hops: 0, flags: 0 } };
    expect(await frontier.acquire(oldTicket)).toEqual({ kind: 'stale' }); // the old id would be dropped

    const cli = trawl(['dlq', 'retry', '--all'], { TRAWL_NAMESPACE: namespace });
    expect((await cli.exited).code).toBe(0);
    expect(cli.stdout()).toMatch(/^1 job\(s\) moved back to waiting/);

    const runs: { lease: string | null; attempt: number; gate: GateDecision['kind'] }[] = [];
    await runWorker(
      async (job) => {
        const decision = await gate(job);
        runs.push({ lease: job.job.leaseId, attempt: job.attempt, gate: decision.kind });
        if (decision.kind !== 'ok') return { outcome: 'stale' };
        await frontier.release({ partition: 0, host: job.job.host, leaseId: job.job.leaseId as string, token: job.token }, clock.now());
        await frontier.ack(0, [job.job.leaseId as string]);
        return { outcome: 'done', summary: { fetched: job.job.url } };
      },
      async () => (await queues.counts()).completed === 1,
    );
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ attempt: 1, gate: 'ok' });
    expect(runs[0]?.lease).toMatch(/^r-[0-9a-f-]{36}$/);
    expect(runs[0]?.lease).not.toBe(lease.id);
    expect(await queues.deadLetters()).toEqual([]);
    expect((await frontier.stats()).leased).toBe(0);
  }, 60_000);
});

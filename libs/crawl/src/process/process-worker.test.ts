import { systemClock } from '@trawl/core';
import { Frontier, frontierKeys, ProcessStream, type Lease } from '@trawl/frontier';
import { testConnection, testRedis, type TestRedis } from '@trawl/redis/testing';
import { createLogger } from '@trawl/telemetry';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeHandedPage } from '../handed-page.js';
import type { ProcessDeps } from './process-entry.js';
import { ProcessWorker } from './process-worker.js';

/**
 * The process stage's consumer against real streams: an entry it works on stays its own for as
 * long as it works on it, however long that is, so no other process stage claims it and
 * processes the same page beside it.
 */
const t: TestRedis = testRedis('process-worker');
afterAll(() => t.cleanup());

const CLAIM_IDLE_MS = 300;

function handedPayload(lease: Lease): string {
  return encodeHandedPage({
    job: { url: lease.url, host: lease.host, partition: lease.partition, depth: 1, maxDepth: null, hops: 0, flags: 0, band: lease.band, leaseId: lease.id, hostDueAt: null },
    response: {
      url: lease.url,
      status: 200,
      headers: {},
      contentType: 'text/html',
      charset: null,
      location: null,
      truncated: false,
      bodySkipped: false,
      rawBytes: 0,
      startedAt: 0,
      firstByteAt: null,
      endedAt: 0,
      etag: null,
      lastModified: null,
    },
    body: null,
  });
}

/** Process deps whose every page stops at its first step, the crawl policy (`policy` is called once per page, then it is left for a retry). */
const depsAsking = (policy: () => Promise<null>): ProcessDeps =>
  ({
    maxDeliveries: 3,
    policy: { get: policy, refresh: async () => null },
    counters: { add: () => undefined },
    logger: createLogger({ level: 'silent', name: 'test' }),
  }) as unknown as ProcessDeps;

/** The `n`th lease of partition `partition`'s host, for pages written to its stream by hand. */
const leaseIn = (partition: number, n: number): Lease =>
  ({ id: `p${partition}-${n}`, url: `http://h${partition}.example/${n}`, host: `h${partition}.example`, partition, depth: 0, hops: 0, flags: 0, band: 0, dueAt: 0 }) as Lease;

/**
 * Runs a process stage over `partitions` until `done()` (at most `timeoutMs`). Its claim time is
 * far beyond the test: an entry it read and left alone would be taken again only then.
 */
async function runStage(deps: ProcessDeps, prefix: string, partitions: number[], concurrency: number, done: () => boolean, timeoutMs: number): Promise<void> {
  const connection = testConnection();
  const worker = new ProcessWorker(deps, {
    stream: new ProcessStream(connection, prefix, partitions.length, 'one'),
    partitions,
    concurrency,
    claimIdleMs: 60_000,
    blockMs: 50,
    logger: createLogger({ level: 'silent', name: 'test' }),
  });
  try {
    worker.start();
    const deadline = Date.now() + timeoutMs;
    while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  } finally {
    await worker.stop(2000);
    connection.disconnect();
  }
}

describe('ProcessWorker', () => {
  it('keeps a full hand of slow pages its own past the claim time: another process stage claims none of them', async () => {
    const prefix = `${t.prefix}:slow`;
    const frontier = new Frontier(t.redis, { prefix, partitions: 1, bands: 4, leaseMs: 60_000, fetchHoldMs: 30_000, busyRetryMs: 500, maxUrlsPerHost: 0, clock: systemClock });
    const hosts = ['a.example', 'b.example'];
    await frontier.push(hosts.map((host) => ({ host, url: `http://${host}/1`, depth: 1, hops: 0, flags: 0, priority: 0.5 })));
    const { leases } = await frontier.claim(0, 2);
    expect(leases).toHaveLength(2);
    for (const lease of leases) {
      const ticket = { partition: 0, host: lease.host, leaseId: lease.id, token: `tok-${lease.id}`, band: lease.band, entry: lease };
      expect(await frontier.acquire(ticket)).toMatchObject({ kind: 'ok' });
      await frontier.release(ticket, Date.now(), { fetchedAliveUntil: Date.now() + 60_000 });
      expect(await frontier.handOff(0, lease.id, ticket.token, handedPayload(lease))).not.toBeNull();
    }

    // Processing stalls on its first step (the crawl policy) until the test lets it go on.
    let release!: () => void;
    const stalled = new Promise<void>((resolve) => (release = resolve));
    const asked: string[] = [];
    const deps = depsAsking(async () => {
      asked.push('policy');
      await stalled;
      return null;
    });
    const readerConnection = testConnection();
    const otherConnection = testConnection();
    const worker = new ProcessWorker(deps, {
      stream: new ProcessStream(readerConnection, prefix, 1, 'slow-one'),
      partitions: [0],
      concurrency: 2,
      claimIdleMs: CLAIM_IDLE_MS,
      blockMs: 50,
      logger: createLogger({ level: 'silent', name: 'test' }),
    });
    const other = new ProcessStream(otherConnection, prefix, 1, 'other-one');
    try {
      worker.start();
      const deadline = Date.now() + 5000;
      while (worker.held < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(worker.held).toBe(2);
      // Five claim times with both pages in hand (no room: the loop waits), checked as the others check.
      const claimed: string[] = [];
      for (let i = 0; i < 10; i += 1) {
        await new Promise((r) => setTimeout(r, CLAIM_IDLE_MS / 2));
        claimed.push(...(await other.claimStale(0, CLAIM_IDLE_MS, 10)).map((e) => e.id));
      }
      expect(claimed).toEqual([]);
      expect(asked).toEqual(['policy', 'policy']);
    } finally {
      release();
      await worker.stop(2000);
      readerConnection.disconnect();
      otherConnection.disconnect();
    }
    // Once it stops working on them (here: no policy, a retry), the others may claim them.
    await new Promise((r) => setTimeout(r, CLAIM_IDLE_MS + 50));
    const after = new ProcessStream(t.redis, prefix, 1, 'after');
    expect(await after.claimStale(0, CLAIM_IDLE_MS, 10)).toHaveLength(2);
  });

  it('works on entries of different partitions that carry the same stream id, each at once', async () => {
    // Each partition's stream numbers its entries itself (time-sequence), so two partitions'
    // pages handed off in the same millisecond share an id: neither may be taken for the other.
    const prefix = `${t.prefix}:same-id`;
    for (const partition of [0, 1]) await t.redis.xadd(frontierKeys(prefix, partition).process, '1000-1', 'd', handedPayload(leaseIn(partition, 1)));
    let asked = 0;
    const deps = depsAsking(async () => ((asked += 1), null));
    await runStage(deps, prefix, [0, 1], 4, () => asked >= 2, 3000);
    expect(asked).toBe(2);
  });

  it('processes no more than its concurrency at once, whatever a read across partitions brings', async () => {
    const prefix = `${t.prefix}:bounded`;
    const leases = [0, 1, 2].flatMap((partition) => [1, 2, 3].map((n) => leaseIn(partition, n)));
    for (const lease of leases) await t.redis.xadd(frontierKeys(prefix, lease.partition).process, '*', 'd', handedPayload(lease));
    let active = 0;
    let most = 0;
    let started = 0;
    const deps = depsAsking(async () => {
      started += 1;
      active += 1;
      most = Math.max(most, active);
      await new Promise((r) => setTimeout(r, 30));
      active -= 1;
      return null;
    });
    await runStage(deps, prefix, [0, 1, 2], 2, () => started >= leases.length, 5000);
    expect(started).toBe(leases.length);
    expect(most).toBe(2);
  });
});

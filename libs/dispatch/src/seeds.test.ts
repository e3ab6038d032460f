import { loadConfig } from '@trawl/config';
import { type Candidate, type CrawlPolicy, policyFromConfig } from '@trawl/model';
import { SeedsQueue, SeedsRejected, SeedsWorker } from '@trawl/queue';
import { testConnection, testRedis } from '@trawl/redis/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { addSeeds } from './seeds.js';

const base = policyFromConfig(loadConfig({ env: {} }), []);

function fakes() {
  let stored: CrawlPolicy | null = null;
  const added: Candidate[] = [];
  return {
    added,
    stored: () => stored,
    deps: {
      policyStore: {
        load: async () => stored,
        update: async (change: (p: CrawlPolicy | null) => CrawlPolicy) => (stored = { ...change(stored), version: (stored?.version ?? 0) + 1 }),
      },
      discovery: {
        add: async (c: readonly Candidate[]) => {
          added.push(...c);
          return { queued: c.length - 1, known: 1 };
        },
      },
      basePolicy: () => base,
    },
  };
}

describe('addSeeds', () => {
  it('queues valid seeds through discovery, widening the scope first, and reports enqueued / already seen', async () => {
    const f = fakes();
    const report = await addSeeds(f.deps, { urls: ['HTTP://Example.COM/a#x', 'https://other.org/'], priority: 0.9 });
    expect(report).toMatchObject({ given: 2, enqueued: 1, already_seen: 1, invalid: [] });
    expect(f.added.map((c) => c.url)).toEqual(['http://example.com/a', 'https://other.org/']);
    expect(f.added.every((c) => c.priority === 0.9)).toBe(true);
    expect(f.stored()?.scope.domains.sort()).toEqual(['example.com', 'other.org']);
  });

  it('refuses the whole request when one URL is bad, naming it, and applies nothing', async () => {
    const f = fakes();
    const error = await addSeeds(f.deps, { urls: ['http://ok.example/', 'ftp://files.example/x', 'not a url'] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SeedsRejected);
    expect((error as SeedsRejected).problems).toEqual([expect.stringMatching(/^urls\.1: "ftp:\/\/files\.example\/x" ERR_URL_SCHEME/), expect.stringMatching(/^urls\.2: "not a url" ERR_URL_INVALID/)]);
    expect(f.added).toEqual([]);
    expect(f.stored()).toBeNull();
  });

  it('with partial (trawl crawl URL…), queues the good seeds and reports the bad ones', async () => {
    const f = fakes();
    const report = await addSeeds(f.deps, { urls: ['http://ok.example/', 'javascript:alert(1)'] }, { partial: true });
    expect(report.invalid).toHaveLength(1);
    expect(f.added.map((c) => c.url)).toEqual(['http://ok.example/']);
  });

  it('max_depth travels with the seeds (their own depth limit, on top of the crawl\'s)', async () => {
    const f = fakes();
    await addSeeds(f.deps, { urls: ['http://a.example/'], max_depth: 2 });
    expect(f.added[0]).toMatchObject({ depth: 0, maxDepth: 2 });
    await addSeeds(f.deps, { urls: ['http://b.example/'] });
    expect(f.added[1]).toMatchObject({ maxDepth: null });
  });

  it('a seed\'s own scope: a host seed in a domain crawl brings only its host, a domain seed in a host crawl its domain', async () => {
    const f = fakes();
    await addSeeds(f.deps, { urls: ['http://www.a.example/'] });
    await addSeeds(f.deps, { urls: ['http://www.b.example/'], scope: 'host' });
    expect(f.stored()?.scope).toMatchObject({ mode: 'domain', domains: ['a.example'], extraHosts: ['www.b.example'] });
  });

  it('scope "any" opens the crawl to every host', async () => {
    const f = fakes();
    await addSeeds(f.deps, { urls: ['http://a.example/'], scope: 'any' });
    expect(f.stored()?.scope.mode).toBe('any');
  });
});

describe('the seeds queue', () => {
  const t = testRedis('seeds');
  const blocking = testConnection({ blocking: true });
  afterAll(async () => {
    blocking.disconnect();
    await t.cleanup();
  });

  it('refuses malformed data at the producer, and fails a malformed job added by hand with the field named', async () => {
    const queue = new SeedsQueue(t.redis, t.prefix);
    const processed: unknown[] = [];
    const worker = new SeedsWorker(blocking, t.prefix, async (data) => {
      processed.push(data);
      if (data.urls.includes('http://bad.example/')) throw new SeedsRejected(['urls.0: "http://bad.example/" is refused']);
      return { enqueued: data.urls.length, already_seen: 0 };
    });
    void worker.run();
    try {
      await expect(queue.add({ urls: [], priority: 2 })).rejects.toThrow(/urls: give at least one URL; priority: .*<=1/);
      // bull-board's "Add job" writes whatever the operator typed, straight into the queue.
      const raw = await queue.queue.add('seeds', { urls: ['http://a.example/'], max_depth: -1, extra: true });
      const rawOutcome = await queue.wait(String(raw.id), 10_000);
      expect(rawOutcome).toMatchObject({ state: 'failed', reason: expect.stringMatching(/^ERR_JOB_DATA_INVALID: .*max_depth/) });
      expect(rawOutcome && 'reason' in rawOutcome ? rawOutcome.reason : '').toMatch(/extra/);

      const rejected = await queue.add({ urls: ['http://bad.example/'] });
      expect(await queue.wait(rejected, 10_000)).toMatchObject({ state: 'failed', reason: expect.stringMatching(/^ERR_SEEDS_INVALID: urls\.0/) });

      const good = await queue.add({ urls: ['http://a.example/', 'http://b.example/'], priority: 0.9, max_depth: 5 });
      expect(await queue.wait(good, 10_000)).toEqual({ state: 'completed', result: { enqueued: 2, already_seen: 0 } });
      expect(processed).toHaveLength(2);
    } finally {
      await worker.close();
      await queue.close();
    }
  });
});

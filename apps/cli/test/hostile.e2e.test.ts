import { FetchQueues } from '@trawl/queue';
import { createRedis } from '@trawl/redis';
import { HOSTILE_KINDS, type HostileWeb, POISON_KINDS, startHostileWeb } from '@trawl/testweb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropNamespace, hostileCrawlEnv, REDIS_URL, runCrawlProcesses, uniqueNamespace } from '../src/testing/index.js';

/**
 * Polite and safe against a hostile web: three processes crawl every kind of
 * misbehaving host at once — calendar traps, redirect chains and loops, a redirect to a
 * private address, 429/503 with and without Retry-After, a tarpit, a 12 MB page, a gzip bomb,
 * legacy encodings, robots.txt that is missing, failing, hanging, redirected, huge or slow, meta
 * robots, and poisoned pages (NUL bytes in canonical, title, meta, base and refresh; lone
 * surrogates; a 200 KB URL; bad schemes) — and every promise is checked from the server's request
 * log: a poisoned page is fetched exactly once, like every well-formed one.
 */
const namespace = uniqueNamespace('hostile');
const crawler = {
  maxRedirects: 5,
  maxBodyBytes: 10 * 1024 * 1024,
  fetchDeadlineMs: 4000,
  attempts: 3,
  robotsMaxBytes: 500 * 1024,
  minBackoffMs: 0,
  robotsToken: 'trawl',
};
const delayMs = 150;
let hostile: HostileWeb;

beforeAll(async () => {
  hostile = await startHostileWeb({ kinds: [...HOSTILE_KINDS, ...POISON_KINDS], normalHosts: 3, pagesPerHost: 6, noisyLinks: true, crawler, seed: 11 });
});

afterAll(async () => {
  await hostile.stop();
  await dropNamespace(namespace);
});

describe('a crawl of the hostile synthetic web', () => {
  it('finishes, keeps every politeness and safety promise, and dead-letters every failure with its reason', async () => {
    const { summary, workers } = await runCrawlProcesses(hostile.seeds, hostileCrawlEnv(namespace, hostile.allowCidr, crawler, delayMs), 3);
    expect(summary.finished).toBe('complete');
    expect(workers.map((w) => w.child.exitCode)).toEqual([0, 0]);

    await hostile.settle();
    const report = hostile.analyze({ minIntervalMs: delayMs, expected: hostile.normalExpected });
    expect(report.violations).toEqual([]);
    expect(hostile.privateServer.log).toEqual([]);
    expect(report.analysis.concurrency.maxPerHost).toBe(1);

    // Every failure is in the dead-letter queue with a readable reason and code.
    const redis = createRedis(REDIS_URL);
    const queues = new FetchQueues(redis, { namespace, partitions: 1, attempts: crawler.attempts });
    const dead = await queues.deadLetters(1000);
    await queues.close();
    redis.disconnect();
    const byUrl = new Map(dead.map((d) => [d.url, d.reason]));
    const at = (kind: (typeof HOSTILE_KINDS)[number] | (typeof POISON_KINDS)[number], path: string) => `${hostile.expectation(kind).origin}${path}`;
    expect(byUrl.get(at('always-500', '/broken'))).toMatch(/^ERR_HTTP_5XX: HTTP 500 \(after 3 attempts\)$/);
    expect(byUrl.get(at('tarpit', '/tarpit'))).toMatch(/^ERR_FETCH_TIMEOUT: /);
    expect(byUrl.get(at('robots-500', '/'))).toMatch(/^ERR_ROBOTS_UNAVAILABLE: /);
    expect(byUrl.get(at('robots-timeout', '/'))).toMatch(/^ERR_ROBOTS_UNAVAILABLE: /);
    for (const reason of byUrl.values()) expect(reason).toMatch(/^ERR_[A-Z0-9_]+: .+/);
    // No poisoned page is dead-lettered: each is recorded (its text cleaned at the database).
    for (const url of byUrl.keys()) expect(url?.startsWith(at('poison', '/')) || url?.startsWith(at('poison-canonical', '/'))).toBe(false);
  }, 300_000);
});

describe('trawl crawl of the poison-canonical site', () => {
  it('finishes with every one of its ten pages fetched exactly once', async () => {
    const site = await startHostileWeb({ kinds: ['poison-canonical'], normalHosts: 1, pagesPerHost: 1, baseAddress: '127.1.70.1', privateAddress: '127.0.0.90', crawler, seed: 3 });
    const ns = uniqueNamespace('poisoncanon');
    const origin = site.expectation('poison-canonical').origin;
    try {
      const { summary } = await runCrawlProcesses([`${origin}/`], hostileCrawlEnv(ns, site.allowCidr, crawler, 50), 1);
      expect(summary).toMatchObject({ finished: 'complete', fetched: 10, deadLettered: 0 });
      await site.settle();
      const pages = site.web.log.filter((e) => `http://${e.host}` === origin && e.path !== '/robots.txt').map((e) => e.path);
      expect(pages.sort()).toEqual(['/', ...Array.from({ length: 9 }, (_, i) => `/p/${i + 1}`)].sort());
    } finally {
      await site.stop();
      await dropNamespace(ns);
    }
  }, 120_000);
});

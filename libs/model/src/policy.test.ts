import { loadConfig } from '@trawl/config';
import { hostDelayMs, HEALTHY } from '@trawl/politeness';
import { testRedis } from '@trawl/redis/testing';
import { DEFAULT_SKIP_EXTENSIONS } from '@trawl/url';
import { afterAll, describe, expect, it } from 'vitest';
import { crawlPolicySchema, type CrawlPolicy, PolicyStore, policyFromConfig, resolvePolicy } from './policy.js';

const policyFor = (env: Record<string, string> = {}): CrawlPolicy => policyFromConfig(loadConfig({ env }), ['http://a.example/']);

describe('policyFromConfig: skipped extensions', () => {
  it.each<[string, Record<string, string>, string[]]>([
    ['non-HTML skipped (the default): the built-in list', {}, [...DEFAULT_SKIP_EXTENSIONS]],
    ['non-HTML stored: none', { TRAWL_NON_HTML: 'store' }, []],
    ['a list given: that list, normalized', { TRAWL_SKIP_EXTENSIONS: 'PDF, .jpg' }, ['pdf', 'jpg']],
    ['a list given with non-HTML stored: still that list', { TRAWL_NON_HTML: 'store', TRAWL_SKIP_EXTENSIONS: 'pdf' }, ['pdf']],
    ['an empty list given (a lone comma): none', { TRAWL_SKIP_EXTENSIONS: ',' }, []],
  ])('%s', (_name, env, expected) => {
    expect(policyFor(env).skipExtensions).toEqual(expected);
  });
});

describe('resolvePolicy: the host delay a crawl started from the environment follows', () => {
  // What `trawl crawl` with these variables does to a host whose robots.txt states `crawlDelayMs`.
  it.each<[string, Record<string, string>, number | null, number]>([
    ['defaults, no Crawl-delay: 1 s', {}, null, 1000],
    ['defaults, Crawl-delay 0.5 s: 0.5 s', {}, 500, 500],
    ['defaults, Crawl-delay 0.1 s: the 250 ms floor', {}, 100, 250],
    ['defaults, Crawl-delay 45 s: the 30 s cap', {}, 45_000, 30_000],
    ['TRAWL_DELAY_FORCE=true, Crawl-delay 0.5 s: 1 s', { TRAWL_DELAY_FORCE: 'true' }, 500, 1000],
    ['TRAWL_MIN_DELAY_MS=3000, Crawl-delay 2 s: 2 s', { TRAWL_MIN_DELAY_MS: '3000' }, 2000, 2000],
    ['TRAWL_CRAWL_DELAY_FLOOR_MS=0, Crawl-delay 0.1 s: 0.1 s', { TRAWL_CRAWL_DELAY_FLOOR_MS: '0' }, 100, 100],
    ['TRAWL_MAX_CRAWL_DELAY_MS=10000, Crawl-delay 20 s: 10 s', { TRAWL_MAX_CRAWL_DELAY_MS: '10000' }, 20_000, 10_000],
  ])('%s', (_name, env, crawlDelayMs, expected) => {
    const { politeness } = resolvePolicy(policyFor(env));
    expect(hostDelayMs({ crawlDelayMs, health: HEALTHY, lastResponseMs: null }, politeness)).toBe(expected);
  });

  it('passes every politeness setting through', () => {
    const { politeness, skipExtensions } = resolvePolicy(
      policyFor({ TRAWL_ADAPTIVE_SAMPLES: '5', TRAWL_ADAPTIVE_RESPONSE_CAP_MS: '2000', TRAWL_HOST_FAILURE_THRESHOLD: '4', TRAWL_SKIP_EXTENSIONS: 'pdf' }),
    );
    expect(politeness).toMatchObject({ adaptiveSamples: 5, adaptiveResponseCapMs: 2000, hostFailureThreshold: 4, forceDelay: false, crawlDelayFloorMs: 250, maxCrawlDelayMs: 30_000 });
    expect([...skipExtensions]).toEqual(['pdf']);
  });
});

describe('crawlPolicySchema', () => {
  it('loads a policy stored before the Crawl-delay, extension and URL-failure settings, keeping its behaviour', () => {
    const current = policyFor();
    const { skipExtensions: _s, politeness, ...rest } = current;
    const { crawlDelayFloorMs: _f, forceDelay: _d, adaptiveResponseCapMs: _c, adaptiveSamples: _n, hostFailureThreshold: _t, ...oldPoliteness } = politeness;
    const old = crawlPolicySchema.parse({ ...rest, politeness: oldPoliteness });
    expect(old.skipExtensions).toEqual([]);
    expect(old.politeness.forceDelay).toBe(true);
    expect(hostDelayMs({ crawlDelayMs: 500, health: HEALTHY, lastResponseMs: null }, resolvePolicy(old).politeness)).toBe(1000);
  });

  it('loads a policy stored before duplicate detection with the defaults, which keep every body and link', () => {
    const { dedup: _d, ...old } = policyFor({ TRAWL_NEAR_DUP_DISTANCE: '1', TRAWL_NEAR_DUP_STORE_BODY: 'false' });
    expect(resolvePolicy(crawlPolicySchema.parse(old)).dedup).toEqual({ nearDupDistance: 3, nearDupStoreBody: true, nearDupFollowLinks: true });
  });

  it('carries the dedup settings of the process that published it', () => {
    const policy = policyFor({ TRAWL_NEAR_DUP_DISTANCE: '1', TRAWL_NEAR_DUP_STORE_BODY: 'false', TRAWL_NEAR_DUP_FOLLOW_LINKS: 'false' });
    expect(resolvePolicy(crawlPolicySchema.parse(policy)).dedup).toEqual({ nearDupDistance: 1, nearDupStoreBody: false, nearDupFollowLinks: false });
    expect(() => crawlPolicySchema.parse({ ...policy, dedup: { ...policy.dedup, nearDupDistance: 4 } })).toThrow();
  });
});

describe('PolicyStore', () => {
  const t = testRedis('policy');
  afterAll(() => t.cleanup());

  it('publishes and loads every new field unchanged', async () => {
    const store = new PolicyStore(t.redis, t.prefix);
    const published = await store.publish(policyFor({ TRAWL_DELAY_FORCE: 'true', TRAWL_SKIP_EXTENSIONS: 'pdf,zip', TRAWL_CRAWL_DELAY_FLOOR_MS: '400' }));
    const loaded = await store.load();
    expect(loaded).toEqual(published);
    expect(loaded?.skipExtensions).toEqual(['pdf', 'zip']);
    expect(loaded?.politeness).toMatchObject({ forceDelay: true, crawlDelayFloorMs: 400 });
  });
});

import { deadPort, type ProxyServer, startMicrosocks, startSquid, stopProxies } from '@trawl/fetch/testing';
import { analyzeLog, TestWeb } from '@trawl/testweb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { frontierKeys } from '@trawl/frontier';
import { createRedis } from '@trawl/redis';
import { dropNamespace, REDIS_URL, trawl, uniqueNamespace } from '../src/testing/index.js';

/**
 * `trawl crawl` through real proxies: squid (HTTP CONNECT) and microsocks (SOCKS5) in one tier
 * beside a dead proxy. Judged from the synthetic web's log (complete, once, polite) and from the
 * proxies' logs: every host reached through exactly one of them, the same one all crawl long.
 */
const HOSTS = 8;
const PAGES = 10;
const DELAY = 100;

let web: TestWeb;
let squid: ProxyServer;
let socks: ProxyServer;
const namespace = uniqueNamespace('proxy');
const refusedNamespace = uniqueNamespace('proxy_refused');

beforeAll(async () => {
  web = await TestWeb.start({ hosts: HOSTS, pagesPerHost: PAGES, linksPerPage: 3, crossHostLinks: 1, latencyMs: { min: 1, max: 5 }, seed: 11 });
  [squid, socks] = await Promise.all([startSquid(), startMicrosocks({ auth: { user: 'crawler', password: 'e2e-s3cret' } })]);
}, 60_000);

afterAll(async () => {
  await web?.stop();
  await stopProxies();
  await dropNamespace(namespace);
  await dropNamespace(refusedNamespace);
});

describe('a crawl through proxies', () => {
  it('is complete, fetches every page once and politely, and keeps each host on one proxy', async () => {
    const env = {
      TRAWL_NAMESPACE: namespace,
      TRAWL_ALLOW_NETWORKS: '127.0.0.0/8',
      TRAWL_MIN_DELAY_MS: String(DELAY),
      TRAWL_SCOPE: 'any',
      TRAWL_CONTENT_DIR: `.trawl/test-content/${namespace}`,
      TRAWL_PROXY_URLS: `dead=http://127.0.0.1:${await deadPort()},sq=${squid.url},s5=${socks.url}`,
      TRAWL_LOG_LEVEL: 'info',
    };
    const seeds = web.rootUrls();
    const crawl = trawl(['crawl', ...seeds, '--json'], env);
    const { code } = await crawl.exited;
    expect(code, crawl.stderr()).toBe(0);
    expect((JSON.parse(crawl.stdout()) as { finished: string }).finished).toBe('complete');

    await web.idle();
    const expected = web.groundTruth(seeds, 'any');
    const report = analyzeLog(web.log, { minIntervalMs: DELAY, expected });
    expect(report.coverage?.missing).toEqual([]);
    expect(report.duplicates.pages).toEqual([]);
    expect(report.concurrency.violations).toEqual([]);
    expect(report.intervals.violations).toEqual([]);

    // squid logs a tunnel when it closes: the crawl has exited, so they all have.
    const hostsOf = (log: string, pattern: RegExp) => new Set([...log.matchAll(pattern)].map((m) => m[1]));
    const lastHost = new URL(seeds[seeds.length - 1] as string).host;
    await squid.waitForLog(lastHost, 2000);
    const viaSquid = hostsOf(squid.log(), /CONNECT (127\.1\.0\.\d+:\d+) /g);
    const viaSocks = hostsOf(socks.log(), /connected to (127\.1\.0\.\d+:\d+)/g);
    const all = seeds.map((seed) => new URL(seed).host);
    expect(new Set([...viaSquid, ...viaSocks])).toEqual(new Set(all));
    // Sticky: no host went through both.
    expect([...viaSquid].filter((host) => viaSocks.has(host))).toEqual([]);
    expect(viaSquid.size).toBeGreaterThan(0);
    expect(viaSocks.size).toBeGreaterThan(0);
    // Politeness through each proxy, from the server's log of the hosts it carried.
    for (const [name, carried] of [['squid', viaSquid], ['microsocks', viaSocks]] as const) {
      const through = analyzeLog(web.log.filter((e) => carried.has(e.host)), { minIntervalMs: DELAY });
      expect(through.intervals.minIntervalMs).toBeGreaterThanOrEqual(DELAY);
      expect(through.concurrency.maxPerHost).toBe(1);
      console.log(`through ${name}: ${carried.size} hosts, ${through.requests} requests, smallest gap per host ${through.intervals.minIntervalMs?.toFixed(1)} ms (delay ${DELAY}), at most ${through.concurrency.maxPerHost} in flight per host`);
    }
    // The credentials never reach a log line.
    expect(crawl.stderr() + crawl.stdout()).not.toContain('e2e-s3cret');
  }, 180_000);

  it('a proxy at an address the SSRF guard refuses stops the crawl before any seed is queued, naming the settings', async () => {
    web.clearLog();
    const crawl = trawl(['crawl', ...web.rootUrls()], {
      TRAWL_NAMESPACE: refusedNamespace,
      TRAWL_ALLOW_NETWORKS: '127.0.0.0/8',
      TRAWL_METRICS_PORT: '0',
      TRAWL_CONTENT_DIR: `.trawl/test-content/${refusedNamespace}`,
      TRAWL_PROXY_URLS: 'dc1=http://crawler:refused-s3cret@10.0.0.5:3128',
    });
    const { code } = await crawl.exited;
    expect(code).toBe(2);
    expect(crawl.stderr()).toContain('TRAWL_PROXY_URLS (fetch.proxyUrls): proxy dc1 (http://***@10.0.0.5:3128) is at a private address');
    expect(crawl.stderr()).toContain('allow it in TRAWL_ALLOW_NETWORKS (e.g. 10.0.0.5:3128)');
    expect(crawl.stderr()).not.toContain('refused-s3cret');
    const redis = createRedis(REDIS_URL);
    try {
      // Nothing was queued: the frontier's count of queued URLs was never written.
      expect(await redis.hget(frontierKeys(refusedNamespace, 0).stats, 'queued')).toBeNull();
    } finally {
      redis.disconnect();
    }
    expect(web.log).toEqual([]);
  }, 120_000);
});

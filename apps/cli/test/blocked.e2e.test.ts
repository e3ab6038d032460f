import { type ProxyServer, startSquid, stopProxies } from '@trawl/fetch/testing';
import { analyzeLog, type RequestLogEntry, TestWeb } from '@trawl/testweb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropNamespace, trawl, uniqueNamespace } from '../src/testing/index.js';

/**
 * Hosts that refuse the crawler, with the default block detector, through a real squid: one
 * answers direct requests with 403 and proxied ones with its pages (it must be crawled completely
 * after moving up a tier), one answers everybody with a bot-challenge page (moved up, then paused
 * with its reason, and the one-off crawl ends). Judged from the synthetic web's log: which address
 * each request came from tells direct from proxied.
 */
const HOSTS = 4;
const PAGES = 8;
const DELAY = 100;
/** squid connects to targets from this address; direct requests come from 127.0.0.1. */
const PROXY_OUT = '127.0.0.9';
const DIRECT_ONLY_BLOCKED = 0;
const WALLED = 1;
const CHALLENGE = '<!DOCTYPE html><html><head><title>Just a moment...</title></head><body><script>window._cf_chl_opt={cvId:"3"}</script></body></html>';

let web: TestWeb;
let squid: ProxyServer;
const namespace = uniqueNamespace('blocked');
const viaProxy = (req: { socket: { remoteAddress?: string } }) => (req.socket.remoteAddress ?? '').endsWith(PROXY_OUT);

beforeAll(async () => {
  web = await TestWeb.start({
    hosts: HOSTS,
    pagesPerHost: PAGES,
    linksPerPage: 3,
    crossHostLinks: 0,
    latencyMs: { min: 1, max: 5 },
    seed: 23,
    hostHandlers: {
      [DIRECT_ONLY_BLOCKED]: (req, res, ctx) => {
        if (viaProxy(req)) return ctx.serve();
        ctx.log({ note: 'direct' });
        res.writeHead(403, { 'content-type': 'text/html' });
        res.end('<html><body><h1>403 Forbidden</h1></body></html>');
      },
      [WALLED]: (req, res, ctx) => {
        ctx.log({ note: viaProxy(req) ? 'proxied' : 'direct' });
        res.writeHead(403, { 'content-type': 'text/html' });
        res.end(CHALLENGE);
      },
    },
  });
  squid = await startSquid({ outgoingAddress: PROXY_OUT });
}, 60_000);

afterAll(async () => {
  await web?.stop();
  await stopProxies();
  await dropNamespace(namespace);
});

describe('hosts that refuse the crawler', () => {
  it('a host that refuses direct requests moves up to the proxy tier and is crawled completely; a walled host is paused with its reason and the crawl ends', async () => {
    const seeds = web.rootUrls();
    const crawl = trawl(['crawl', ...seeds, '--json'], {
      TRAWL_NAMESPACE: namespace,
      TRAWL_ALLOW_NETWORKS: '127.0.0.0/8',
      TRAWL_MIN_DELAY_MS: String(DELAY),
      TRAWL_SCOPE: 'any',
      TRAWL_CONTENT_DIR: `.trawl/test-content/${namespace}`,
      TRAWL_PROXY_URLS: `dc=${squid.url}`,
      TRAWL_PROXY_TIERS: 'direct=none;dc=dc',
    });
    const { code } = await crawl.exited;
    expect(code, crawl.stderr()).toBe(0);
    const summary = JSON.parse(crawl.stdout()) as {
      finished: string;
      blockedHosts: Array<{ host: string; reason: string; queued: number }>;
      counters: Record<string, number>;
    };
    expect(summary.finished).toBe('complete');
    await web.idle();

    const walledHost = new URL(seeds[WALLED] as string).host;
    // Paused with its reason, its one URL kept for an operator.
    expect(summary.blockedHosts).toEqual([{ host: walledHost, reason: expect.stringMatching(/^blocked: 3 refusals in a row, the last: a challenge page \(HTTP 403/), queued: 1 }]);
    expect(summary.counters.hostsEscalated).toBe(2);
    expect(summary.counters.hostsBlocked).toBe(1);

    // Complete and once (counting only the answers that were pages), and polite across tiers.
    const others = seeds.filter((_, i) => i !== WALLED);
    const answered = web.log.filter((e) => e.status !== 403);
    const report = analyzeLog(answered, { minIntervalMs: DELAY, expected: web.groundTruth(others, 'any') });
    expect(report.coverage?.missing).toEqual([]);
    expect(report.duplicates.pages).toEqual([]);
    const all = analyzeLog(web.log, { minIntervalMs: DELAY });
    expect(all.concurrency.violations).toEqual([]);
    expect(all.intervals.violations).toEqual([]);
    const moved = analyzeLog(web.log.filter((e) => e.hostIndex === DIRECT_ONLY_BLOCKED), { minIntervalMs: DELAY });
    console.log(`blocked host, direct then through squid: ${moved.requests} requests, smallest gap ${moved.intervals.minIntervalMs?.toFixed(1)} ms (delay ${DELAY}), at most ${moved.concurrency.maxPerHost} in flight`);

    // The blocked host: a few refused direct requests (robots.txt, the root and its retry), then
    // everything through the proxy; the other hosts never went through it.
    const of = (host: number) => web.log.filter((e) => e.hostIndex === host);
    const direct = of(DIRECT_ONLY_BLOCKED).filter((e) => e.note === 'direct');
    expect(direct.length).toBe(3);
    expect(direct.every((e) => e.status === 403)).toBe(true);
    const proxied = of(DIRECT_ONLY_BLOCKED).filter((e) => e.note !== 'direct');
    expect(proxied.length).toBe(PAGES + 1); // its pages and robots.txt, once each
    const firstProxied = Math.min(...proxied.map((e) => e.start));
    expect(Math.max(...direct.map((e) => e.start))).toBeLessThan(firstProxied);
    const timeline = {
      firstRefusal: Math.min(...direct.map((e) => e.start)),
      movedUp: firstProxied,
      lastPage: Math.max(...proxied.map((e) => e.end)),
    };
    // A retry's delay (TRAWL_RETRY_BASE_MS, jittered) at most between the first refusal and the move.
    expect(timeline.movedUp - timeline.firstRefusal).toBeLessThan(15_000);
    console.log(`blocked host timeline: first refusal +0 ms, moved up +${timeline.movedUp - timeline.firstRefusal} ms, last page +${timeline.lastPage - timeline.firstRefusal} ms`);

    // The walled host: refused directly, moved up, refused through the proxy too, then left alone.
    const walled = of(WALLED) as RequestLogEntry[];
    expect(walled.filter((e) => e.note === 'direct').length).toBe(3);
    expect(walled.filter((e) => e.note === 'proxied').length).toBe(3);
    for (const host of [2, 3]) expect(of(host).every((e) => e.status === 200 || e.path === '/robots.txt')).toBe(true);
    expect(squid.log()).not.toContain(new URL(seeds[2] as string).host);
  }, 180_000);
});

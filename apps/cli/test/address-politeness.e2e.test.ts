import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startMicrosocks, stopProxies } from '@trawl/fetch/testing';
import { type RequestLogEntry, TestWeb } from '@trawl/testweb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropNamespace, maxInFlight, runCrawlProcesses, uniqueNamespace } from '../src/testing/index.js';

/**
 * Politeness per server: several sites (host names) on ONE loopback address, the way shared
 * hosting puts them, each a synthetic web of its own on its own port. Judged from the sites'
 * request logs, merged: what the one server saw, not what the crawler counted.
 */
const SITES = 4;
const PAGES = 6;
const ADDRESS = '127.77.0.1';
const DELAY = 150;

let webs: TestWeb[] = [];
/** One owner's three subdomains, each on its own address (`domain` mode's case). */
let owner: TestWeb;
let dir: string;
let hostsFile: string;
const namespaces: string[] = [];

beforeAll(async () => {
  for (let i = 0; i < SITES; i++) {
    webs.push(await TestWeb.start({ hosts: 1, pagesPerHost: PAGES, linksPerPage: 2, crossHostLinks: 0, latencyMs: { min: 20, max: 40 }, seed: 40 + i, baseAddress: ADDRESS, hostnames: `s${i}.test`, noisyLinks: false }));
  }
  owner = await TestWeb.start({ hosts: 3, pagesPerHost: PAGES, linksPerPage: 2, crossHostLinks: 0, latencyMs: { min: 20, max: 40 }, seed: 50, baseAddress: '127.78.0.1', hostnames: 'owner.test', noisyLinks: false });
  dir = mkdtempSync(join(tmpdir(), 'trawl-ipgate-'));
  hostsFile = join(dir, 'hosts');
  writeFileSync(hostsFile, `${ADDRESS}\t${webs.map((_, i) => `h0.s${i}.test`).join(' ')}\n${owner.hostsFile()}`);
}, 60_000);

afterAll(async () => {
  await Promise.all([...webs, owner].map((web) => web?.stop()));
  await stopProxies();
  webs = [];
  rmSync(dir, { recursive: true, force: true });
  for (const namespace of namespaces) await dropNamespace(namespace);
});

function envFor(label: string, extra: Record<string, string>): Record<string, string> {
  const namespace = uniqueNamespace(label);
  namespaces.push(namespace);
  return {
    TRAWL_NAMESPACE: namespace,
    TRAWL_ALLOW_NETWORKS: '127.0.0.0/8',
    TRAWL_HOSTS_FILE: hostsFile,
    TRAWL_CONTENT_DIR: `.trawl/test-content/${namespace}`,
    TRAWL_LOG_LEVEL: 'warn',
    ...extra,
  };
}

/** Every request the sites saw, merged in start order (high-resolution times). */
function mergedLog(sites: readonly TestWeb[] = webs): RequestLogEntry[] {
  return sites.flatMap((web) => web.log).sort((a, b) => (a.startHr ?? a.start) - (b.startHr ?? b.start));
}

/** The most requests in flight at once, and the shortest and the median gap from one response's end to the next start. */
function politeness(log: readonly RequestLogEntry[]): { maxInFlight: number; minGapMs: number; medianGapMs: number } {
  const gaps = log.slice(1).map((entry, i) => (entry.startHr ?? 0) - ((log[i] as RequestLogEntry).endHr ?? 0)).sort((a, b) => a - b);
  return { maxInFlight: maxInFlight(log), minGapMs: gaps[0] ?? Number.POSITIVE_INFINITY, medianGapMs: gaps[Math.floor(gaps.length / 2)] ?? Number.NaN };
}

/** Every page of every site fetched, none twice. */
function expectCompleteOnce(sites: readonly TestWeb[] = webs): void {
  for (const web of sites) {
    const pages = web.log.filter((entry) => entry.resource === 'page').map((entry) => `${web.origins[entry.hostIndex]}${entry.pageKey}`);
    expect(new Set(pages)).toEqual(web.groundTruth(web.rootUrls(), 'host'));
    expect(pages.length, 'duplicate fetches').toBe(new Set(pages).size);
  }
}

const seeds = () => webs.flatMap((web) => web.rootUrls());
const clearLogs = () => webs.forEach((web) => web.clearLog());

describe('politeness per server address', () => {
  it('ip mode, two processes: never two requests in flight to the address, each the delay after the last', async () => {
    clearLogs();
    const { summary } = await runCrawlProcesses(seeds(), envFor('ip', { TRAWL_POLITENESS_KEY: 'ip', TRAWL_MIN_DELAY_MS: String(DELAY), TRAWL_CONCURRENCY: '8' }), 2);
    expect(summary.finished).toBe('complete');
    await Promise.all(webs.map((web) => web.idle()));
    const log = mergedLog();
    const { maxInFlight, minGapMs, medianGapMs } = politeness(log);
    console.log(`ip mode: ${log.length} requests to ${ADDRESS} from ${SITES} host names, max in flight ${maxInFlight}, gap end→start min ${minGapMs.toFixed(1)} ms, median ${medianGapMs.toFixed(1)} ms (delay ${DELAY} ms)`);
    expect(maxInFlight).toBe(1);
    // The crawler's clock counts whole milliseconds: allow one.
    expect(minGapMs).toBeGreaterThanOrEqual(DELAY - 1);
    expectCompleteOnce();
  }, 180_000);

  it('host mode: the per-address cap holds across the host names, while they still run side by side', async () => {
    clearLogs();
    const { summary } = await runCrawlProcesses(
      seeds(),
      envFor('ipcap', { TRAWL_MIN_DELAY_MS: '0', TRAWL_ADAPTIVE_DELAY_FACTOR: '0', TRAWL_IP_MAX_IN_FLIGHT: '2', TRAWL_IP_MIN_INTERVAL_MS: '0', TRAWL_CONCURRENCY: '8' }),
    );
    expect(summary.finished).toBe('complete');
    await Promise.all(webs.map((web) => web.idle()));
    const log = mergedLog();
    const { maxInFlight } = politeness(log);
    console.log(`host mode, cap 2: ${log.length} requests to ${ADDRESS} from ${SITES} host names, max in flight ${maxInFlight}`);
    expect(maxInFlight).toBe(2);
    expectCompleteOnce();
  }, 180_000);

  it('domain mode: one owner\'s subdomains on three addresses share one request in flight and the delay', async () => {
    owner.clearLog();
    const { summary } = await runCrawlProcesses(owner.rootUrls(), envFor('domain', { TRAWL_POLITENESS_KEY: 'domain', TRAWL_MIN_DELAY_MS: String(DELAY), TRAWL_CONCURRENCY: '8' }));
    expect(summary.finished).toBe('complete');
    await owner.idle();
    const log = mergedLog([owner]);
    const { maxInFlight, minGapMs, medianGapMs } = politeness(log);
    console.log(`domain mode: ${log.length} requests to 3 hosts of owner.test, max in flight ${maxInFlight}, gap end→start min ${minGapMs.toFixed(1)} ms, median ${medianGapMs.toFixed(1)} ms (delay ${DELAY} ms)`);
    expect(maxInFlight).toBe(1);
    expect(minGapMs).toBeGreaterThanOrEqual(DELAY - 1);
    expectCompleteOnce([owner]);
  }, 180_000);

  it('ip mode through a proxy: the group is still the target server, whatever carries the requests', async () => {
    clearLogs();
    const socks = await startMicrosocks();
    const { summary } = await runCrawlProcesses(seeds(), envFor('ipproxy', { TRAWL_POLITENESS_KEY: 'ip', TRAWL_MIN_DELAY_MS: String(DELAY), TRAWL_CONCURRENCY: '8', TRAWL_PROXY_URLS: `s5=${socks.url}` }));
    expect(summary.finished).toBe('complete');
    await Promise.all(webs.map((web) => web.idle()));
    const log = mergedLog();
    const { maxInFlight, minGapMs, medianGapMs } = politeness(log);
    console.log(`ip mode through SOCKS5: ${log.length} requests, max in flight ${maxInFlight}, gap end→start min ${minGapMs.toFixed(1)} ms, median ${medianGapMs.toFixed(1)} ms`);
    // The requests went through the proxy…
    expect(socks.log()).toContain(`connected to ${ADDRESS}`);
    // …and the one server still saw one request at a time, the delay apart.
    expect(maxInFlight).toBe(1);
    expect(minGapMs).toBeGreaterThanOrEqual(DELAY - 1);
    expectCompleteOnce();
  }, 180_000);
});

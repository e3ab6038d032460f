/**
 * The hostile synthetic web: normal hosts, then one host per hostile kind, each misbehaving in
 * one way a crawler must survive, all in one /16 of loopback (`allowCidr`), plus a "private"
 * server outside it that only a broken SSRF guard would reach. Each hostile host comes with a
 * HostileExpectation (what a correct crawler fetches, must never fetch, and the bounds it keeps)
 * and analyzeHostile checks them all against the request log.
 */
import { sleep } from '@trawl/core';
import type { AnalyzeHostileOptions, HostileReport } from './analyze-hostile.js';
import { analyzeHostile } from './analyze-hostile.js';
import { TestWebError, TestWebErrorCode } from './errors.js';
import type { HostileKnobs, Preset, PresetEnv } from './hostile/preset.js';
import { poison, poisonCanonical } from './hostile/presets-poison.js';
import type { PrivateServer } from './hostile/private-server.js';
import { startPrivateServer } from './hostile/private-server.js';
import { robots404, robots500, robotsCrawlDelay, robotsDisallow, robotsHuge, robotsRedirect, robotsTimeout, metaRobots } from './hostile/presets-robots.js';
import {
  always500,
  calendarTrap,
  encodings,
  gzipBombHost,
  hugePage,
  redirects,
  tarpit,
  throttle429,
  throttle429Bare,
  unavailable503,
  unavailable503Bare,
} from './hostile/presets-traffic.js';
import type { HostileSite } from './hostile/site.js';
import { siteHandler } from './hostile/site.js';
import type { CrawlerLimits, HostileExpectation, HostileKind } from './hostile/types.js';
import { DEFAULT_CRAWLER_LIMITS, HOSTILE_KINDS, POISON_KINDS } from './hostile/types.js';
import type { HostHandler, TestWebOptions } from './options.js';
import { TestWeb } from './testweb.js';

export { DEFAULT_CRAWLER_LIMITS, HOSTILE_KINDS, POISON_KINDS };
export type { CrawlerLimits, HostileExpectation, HostileKind, PathLimit } from './hostile/types.js';
export type { PrivateServer } from './hostile/private-server.js';

/** One builder per kind: the host's routes and what a correct crawler does there. */
const PRESETS: Record<HostileKind, (env: PresetEnv) => Preset> = {
  'calendar-trap': calendarTrap,
  redirects,
  'throttle-429': throttle429,
  'throttle-429-bare': throttle429Bare,
  'unavailable-503': unavailable503,
  'unavailable-503-bare': unavailable503Bare,
  'always-500': always500,
  tarpit,
  'huge-page': hugePage,
  'gzip-bomb': gzipBombHost,
  encodings,
  'robots-404': robots404,
  'robots-500': robots500,
  'robots-timeout': robotsTimeout,
  'robots-redirect': robotsRedirect,
  'robots-huge': robotsHuge,
  'robots-crawl-delay': robotsCrawlDelay,
  'robots-disallow': robotsDisallow,
  'meta-robots': metaRobots,
  poison,
  'poison-canonical': poisonCanonical,
};

export interface HostileWebOptions {
  /** One host per kind, in this order, after the normal hosts. */
  kinds: readonly HostileKind[];
  /** Ordinary synthetic hosts first (≥ 1; /r/offsite redirects to one); default 2. */
  normalHosts?: number;
  /** Pages per normal host; default 6. */
  pagesPerHost?: number;
  /** Normal hosts' link table (see TestWebOptions); defaults 3, 1, false. */
  linksPerPage?: number;
  crossHostLinks?: number;
  noisyLinks?: boolean;
  /** Ordinary pages `/a/1…n` on each hostile host, linked from its root; default 3. */
  plainPages?: number;
  seed?: number;
  /** First address; default 127.1.0.1. Every host must fall in its /16, which is `allowCidr`. */
  baseAddress?: string;
  /** The private server's address: in 127.0.0.0/8, outside `allowCidr`; default 127.0.0.99. */
  privateAddress?: string;
  port?: number;
  bindAttempts?: number;
  latencyMs?: TestWebOptions['latencyMs'];
  pageBytes?: number;
  /** What the crawler under test promises (expectations follow from it); default trawl's. */
  crawler?: Partial<CrawlerLimits>;
  /** Throttled answers per page before the 200 (throttle-*, unavailable-*); default 1. */
  throttleRepeats?: number;
  /** Retry-After of throttle-429 (delta) and unavailable-503 (date); default 2. */
  retryAfterSeconds?: number;
  /** The calendar host's request bound; default 100. */
  calendarMaxRequests?: number;
  /** Default 12 MiB; at least the crawler's maxBodyBytes + 512 KiB. */
  hugePageBytes?: number;
  /** Default 16 GiB (≈ 17 MB on the wire, well above what socket buffers can hide). */
  bombInflatedBytes?: number;
  /** How long the bomb's response may stay open; default 10 s. */
  bombMaxResponseMs?: number;
  /** Default 500. */
  tarpitIntervalMs?: number;
}

export interface HostileWeb {
  web: TestWeb;
  /** One per kind, in `kinds` order. */
  expectations: HostileExpectation[];
  privateServer: PrivateServer;
  /** Roots that reach the normal web, then every hostile host's root. */
  seeds: string[];
  /** The /16 every host of the web is in: the crawler's allow list (TRAWL_ALLOW_NETWORKS), and nothing else. */
  allowCidr: string;
  /** The normal hosts' ground truth from the seeds (scope 'any'). */
  normalExpected: Set<string>;
  expectation(kind: HostileKind): HostileExpectation;
  /** analyzeHostile over the web's log with the private log and normalExpected filled in. */
  analyze(options?: Omit<AnalyzeHostileOptions, 'privateLog'>): HostileReport;
  /** Waits until no response is open (or `timeoutMs`); true when idle. Call before analyze(). */
  settle(timeoutMs?: number): Promise<boolean>;
  stop(): Promise<void>;
}

const octets = (address: string): number[] => address.split('.').map(Number);

/** An integer option ≥ min. */
function positive(name: string, value: number, min: number): number {
  if (!(Number.isSafeInteger(value) && value >= min)) throw new TestWebError(TestWebErrorCode.Options, `${name} must be an integer ≥ ${min}, got ${value}`);
  return value;
}

function knobsOf(options: HostileWebOptions, limits: CrawlerLimits): HostileKnobs {
  const hugePageBytes = options.hugePageBytes ?? 12 * 1024 * 1024;
  return {
    seed: options.seed ?? 1,
    plainPages: positive('plainPages', options.plainPages ?? 3, 0),
    throttleRepeats: positive('throttleRepeats', options.throttleRepeats ?? 1, 1),
    retryAfterSeconds: positive('retryAfterSeconds', options.retryAfterSeconds ?? 2, 1),
    calendarMaxRequests: positive('calendarMaxRequests', options.calendarMaxRequests ?? 100, 1),
    hugePageBytes: positive('hugePageBytes (crawler maxBodyBytes + 512 KiB at least)', hugePageBytes, limits.maxBodyBytes + 512 * 1024),
    bombInflatedBytes: positive('bombInflatedBytes', options.bombInflatedBytes ?? 16 * 1024 ** 3, 1024 * 1024),
    bombMaxResponseMs: positive('bombMaxResponseMs', options.bombMaxResponseMs ?? 10_000, 1),
    tarpitIntervalMs: positive('tarpitIntervalMs', options.tarpitIntervalMs ?? 500, 1),
  };
}

export async function startHostileWeb(options: HostileWebOptions): Promise<HostileWeb> {
  const kinds = [...options.kinds];
  const unknown = kinds.filter((kind) => !(kind in PRESETS));
  if (unknown.length > 0) throw new TestWebError(TestWebErrorCode.Options, `unknown hostile kinds: ${unknown.join(', ')}`);
  if (new Set(kinds).size !== kinds.length) throw new TestWebError(TestWebErrorCode.Options, `each hostile kind may appear once: ${kinds.join(', ')}`);
  const normalHosts = positive('normalHosts', options.normalHosts ?? 2, 1);
  const limits: CrawlerLimits = { ...DEFAULT_CRAWLER_LIMITS, ...options.crawler };
  const knobs = knobsOf(options, limits);
  const baseAddress = options.baseAddress ?? '127.1.0.1';
  const privateAddress = options.privateAddress ?? '127.0.0.99';
  const [a, b] = octets(baseAddress);
  const allowCidr = `${a}.${b}.0.0/16`;
  const [pa, pb] = octets(privateAddress);
  if (pa !== 127 || (pa === a && pb === b)) {
    throw new TestWebError(TestWebErrorCode.Options, `privateAddress must be in 127.0.0.0/8 and outside ${allowCidr}, got ${privateAddress}`);
  }

  const sites: (HostileSite | undefined)[] = kinds.map(() => undefined);
  const hostHandlers: Record<number, HostHandler> = {};
  kinds.forEach((_kind, i) => (hostHandlers[normalHosts + i] = siteHandler(() => sites[i])));
  const privateServer = await startPrivateServer(privateAddress);
  let web: TestWeb;
  try {
    web = await TestWeb.start({
      hosts: normalHosts,
      extraHosts: kinds.length,
      pagesPerHost: options.pagesPerHost ?? 6,
      linksPerPage: options.linksPerPage ?? 3,
      crossHostLinks: options.crossHostLinks ?? 1,
      noisyLinks: options.noisyLinks ?? false,
      seed: knobs.seed,
      baseAddress,
      port: options.port,
      bindAttempts: options.bindAttempts,
      latencyMs: options.latencyMs,
      pageBytes: options.pageBytes,
      hostHandlers,
    });
  } catch (error) {
    await privateServer.stop();
    throw error;
  }
  const last = web.origins[web.origins.length - 1] ?? '';
  if (!new URL(last).hostname.startsWith(`${a}.${b}.`)) {
    await Promise.all([web.stop(), privateServer.stop()]);
    throw new TestWebError(TestWebErrorCode.Options, `${web.origins.length} hosts from ${baseAddress} run past ${allowCidr}`);
  }

  const offsiteUrl = web.pageUrl(0, Math.min(1, web.model.pagesPerHost - 1));
  const presets = kinds.map((kind, i) =>
    PRESETS[kind]({ kind, hostIndex: normalHosts + i, origin: web.origins[normalHosts + i] as string, privateUrl: privateServer.secretUrl, offsiteUrl, limits, knobs }),
  );
  presets.forEach((preset, i) => (sites[i] = preset.site));
  const expectations = presets.map((preset) => preset.expectation);
  const normalSeeds = web.describe().seeds;
  const normalExpected = web.groundTruth(normalSeeds);
  let stopped: Promise<void> | null = null;

  return {
    web,
    expectations,
    privateServer,
    seeds: [...normalSeeds, ...web.origins.slice(normalHosts).map((origin) => `${origin}/`)],
    allowCidr,
    normalExpected,
    expectation(kind) {
      const found = expectations.find((e) => e.kind === kind);
      if (found === undefined) throw new TestWebError(TestWebErrorCode.Range, `no ${kind} host in this web`);
      return found;
    },
    analyze: (analyzeOptions = {}) =>
      analyzeHostile(web.log, expectations, { expected: normalExpected, ...analyzeOptions, privateLog: privateServer.log }),
    async settle(timeoutMs = 2000) {
      const timer = new AbortController();
      let idle = false;
      await Promise.race([web.idle().then(() => (idle = true)), sleep(timeoutMs, timer.signal)]);
      timer.abort();
      return idle;
    },
    stop: () => (stopped ??= Promise.all([web.stop(), privateServer.stop()]).then(() => undefined)),
  };
}

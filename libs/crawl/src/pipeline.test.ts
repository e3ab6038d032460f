import { loadConfig } from '@trawl/config';
import { ErrorCode, ManualClock, TrawlError } from '@trawl/core';
import type { FetchResult } from '@trawl/fetch';
import { type GateDecision, UrlFlag } from '@trawl/frontier';
import { policyFromConfig, resolvePolicy, type ResolvedPolicy } from '@trawl/model';
import { decodeFetchJob, type FetchJobContext, type FetchJobData } from '@trawl/queue';
import type { RobotsEntry } from '@trawl/robots';
import type { ContentStore } from '@trawl/store';
import { DEFAULT_LEARNER_SETTINGS, RenderLearner, type RenderOptions, RequestRefused } from '@trawl/render';
import { FakeRenderer } from '@trawl/render/testing';
import { silentLogger } from '@trawl/telemetry';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { PipelineDeps } from './deps.js';
import { processFetchJob } from './fetch/fetch-job.js';
import { GATE_ASK_AHEAD_MS } from './fetch/gate.js';
import { analyzePage, type PageAnalysisInput } from './process/analyze.js';
import { inlineAnalyzer } from './process/analyzer.js';
import { processEntry } from './process/process-entry.js';
import type { RenderDeps } from './fetch/render-step.js';
import type { FetchRecord } from './record.js';

/**
 * Every exit path of a fetch job, with fakes for the frontier, fetcher, store, records and acks.
 * Each test checks the same three rules: the host is released exactly once (by the job that
 * holds it) with the right due time; a record is written before the ack; and the queue gets
 * the right action.
 */

const HOST = 'example.com';
const URL_ = `http://${HOST}/a`;
const DELAY = 1000;
const T0 = 1_700_000_000_000;

type Event =
  | { kind: 'acquire'; at?: number }
  | { kind: 'release'; dueAt: number; keepHost: boolean; leaseUntil: number | undefined; streak: number | undefined }
  | { kind: 'extend'; until: number }
  | { kind: 'fetch'; url: string; at: number; tierLevel?: number }
  | { kind: 'robots' }
  | { kind: 'store' }
  | { kind: 'discover'; urls: string[]; recheck: boolean; urgent: boolean; bands: (number | undefined)[] }
  | { kind: 'record'; record: FetchRecord }
  | { kind: 'ack'; leaseId: string }
  | { kind: 'state' }
  | { kind: 'clear' }
  | { kind: 'handoff' };

interface Fakes {
  events: Event[];
  clock: ManualClock;
  gate: GateDecision[];
  robots: RobotsEntry | null;
  robotsFetch: () => Promise<Awaited<ReturnType<PipelineDeps['fetcher']['fetchRobots']>>>;
  fetch: () => Promise<FetchResult>;
  store: () => Promise<void>;
  record: (record: FetchRecord) => Promise<string | void>;
  policy: ResolvedPolicy | null;
  /** What PostgreSQL says about the job's URL (urls.state). */
  urlState: string | null;
  /** Payloads the fetch stage handed to the process stream. */
  handed: string[];
  /** The content store's bodies, by key. */
  bodies: Map<string, Buffer>;
}

let f: Fakes;

const rulesEntry = (body: string): RobotsEntry => ({ kind: 'rules', status: 200, body, fetchedAt: T0, expiresAt: T0 + 86_400_000 });

function response(status: number, extra: Partial<FetchResult> = {}): FetchResult {
  const body = Buffer.from(extra.body ?? (status === 200 ? '<html><body><a href="/b">b</a><a href="/c">c</a></body></html>' : ''));
  return {
    url: URL_,
    status,
    headers: { 'content-type': 'text/html' },
    contentType: 'text/html',
    charset: null,
    location: null,
    body,
    truncated: false,
    bodySkipped: false,
    rawBytes: body.length,
    startedAt: f.clock.now(),
    firstByteAt: f.clock.now() + 10,
    endedAt: f.clock.now() + 20,
    etag: null,
    lastModified: null,
    ...extra,
  };
}

let entries = 0;

/** The pipeline over the fakes; `storeText` as TRAWL_CONTENT_STORE_TEXT (the process stage the hand-off runs sees it too). */
function deps(options: { storeText?: boolean } = {}): PipelineDeps {
  const events = f.events;
  const stored = f.bodies;
  const store: ContentStore = {
    put: async (body) => {
      events.push({ kind: 'store' });
      await f.store();
      stored.set(`sha256:${body.length}`, Buffer.from(body));
      return { key: `sha256:${body.length}`, contentHash: String(body.length), storedBytes: body.length, existed: false };
    },
    get: async (key) => stored.get(key) ?? null,
    has: async () => false,
    check: async () => undefined,
    close: async () => undefined,
  };
  const pipeline: PipelineDeps = {
    storeText: options.storeText ?? false,
    frontier: {
      acquire: async (_ticket, options = {}) => {
        events.push(options.at === undefined ? { kind: 'acquire' } : { kind: 'acquire', at: options.at });
        return f.gate.shift() ?? { kind: 'ok', dueAt: 0, health: { streak: 0, backoffMs: 0 } };
      },
      release: async (_ticket, dueAt, options = {}) => {
        events.push({ kind: 'release', dueAt, keepHost: options.keepHost === true, leaseUntil: options.leaseUntil, streak: options.health?.streak });
        return true;
      },
      extendLease: async (_p, _id, until) => {
        events.push({ kind: 'extend', until });
        return true;
      },
      clearFetched: async () => void events.push({ kind: 'clear' }),
      passHold: async () => undefined,
      markHandedToRender: async () => undefined,
      takeHost: async () => ({ kind: 'ok', dueAt: 0 }),
      // No page here renders: another host's gate is never asked for.
      borrowHost: async () => ({ kind: 'paused' }),
      returnHost: async () => true,
      // The process stream, as if a process stage read the entry at once.
      handOff: async (partition, _leaseId, _token, payload) => {
        events.push({ kind: 'handoff' });
        f.handed.push(payload);
        const id = `${f.clock.now()}-${(entries += 1)}`;
        await processEntry({ ...pipeline, maxDeliveries: 4 }, { partition, id, payload, deliveries: 1, urgent: false });
        return id;
      },
    },
    fetcher: {
      fetch: async (url, extra) => {
        events.push(extra?.tierLevel === undefined ? { kind: 'fetch', url, at: f.clock.now() } : { kind: 'fetch', url, at: f.clock.now(), tierLevel: extra.tierLevel });
        return f.fetch();
      },
      fetchRobots: async () => {
        events.push({ kind: 'robots' });
        return f.robotsFetch();
      },
    },
    store,
    robots: { get: async () => f.robots, set: async (_origin, entry) => void (f.robots = entry) },
    discovery: {
      add: async (candidates, options) => {
        events.push({ kind: 'discover', urls: candidates.map((c) => c.url), recheck: options?.recheck === true, urgent: options?.urgent === true, bands: candidates.map((c) => c.band) });
        return { queued: candidates.length, known: 0 };
      },
    },
    records: {
      // As Records does: the row is written, then (unless refused) its lease acknowledged.
      add: async (record, lease) => {
        const refused = await f.record(record);
        events.push({ kind: 'record', record });
        if (!refused && lease) events.push({ kind: 'ack', leaseId: lease.leaseId });
        return refused ?? null;
      },
    },
    acks: { ack: async (_p, leaseId) => void events.push({ kind: 'ack', leaseId: leaseId ?? '' }) },
    policy: { get: async () => f.policy, refresh: async () => f.policy },
    counters: { add: () => undefined },
    clock: f.clock,
    logger: silentLogger,
    retry: { attempts: 4, timeoutAttempts: 2, baseMs: 5000, maxMs: 60_000 },
    leaseMs: 300_000,
    gateWaitMs: 100,
    urlStates: {
      state: async () => {
        events.push({ kind: 'state' });
        return f.urlState as never;
      },
    },
  };
  return pipeline;
}

function job(attempt = 1, maxAttempts = 3, data: Partial<FetchJobData> = {}, redelivered = false): FetchJobContext {
  return { id: 'p0-1', job: decodeFetchJob({ u: URL_, h: HOST, p: 0, d: 0, x: 0, f: 0, b: 2, l: 'p0-1', ...data }), token: 'tok', attempt, maxAttempts, signal: undefined, redelivered };
}

const of = <K extends Event['kind']>(kind: K) => f.events.filter((e): e is Extract<Event, { kind: K }> => e.kind === kind);
const order = () => f.events.map((e) => e.kind).filter((k) => ['release', 'record', 'ack', 'discover', 'store', 'fetch'].includes(k));

beforeEach(() => {
  const config = loadConfig({ env: { TRAWL_MIN_DELAY_MS: String(DELAY), TRAWL_ADAPTIVE_DELAY_FACTOR: '0' } });
  f = {
    events: [],
    clock: new ManualClock(T0),
    gate: [],
    robots: rulesEntry('User-agent: *\nAllow: /\n'),
    robotsFetch: async () => ({ kind: 'response', status: 200, body: Buffer.from('User-agent: *\nDisallow: /private\n'), finalUrl: `http://${HOST}/robots.txt`, redirects: 0 }) as never,
    fetch: async () => response(200),
    store: async () => undefined,
    record: async () => undefined,
    policy: resolvePolicy(policyFromConfig(config, [URL_])),
    urlState: 'queued',
    handed: [],
    bodies: new Map(),
  };
});

/** An address gate fake's slots kept for a render stage: no page is handed over in these tests. */
const handedSlots = { keep: async () => undefined, release: async () => undefined };

describe('processFetchJob: every exit path releases once, records before it acks', () => {
  it('no policy yet: defers, touches nothing', async () => {
    f.policy = null;
    const result = await processFetchJob(deps(), job());
    expect(result).toEqual({ outcome: 'defer', until: T0 + 1000 });
    expect(f.events).toEqual([]);
  });

  it('robots.txt already forbids the URL: hands the claim back (due untouched), records skipped, acks', async () => {
    f.robots = rulesEntry('User-agent: *\nDisallow: /a\n');
    const result = await processFetchJob(deps(), job());
    expect(result).toMatchObject({ outcome: 'done', summary: { skipped: ErrorCode.RobotsDisallowed } });
    expect(of('acquire')).toHaveLength(0);
    expect(of('release')).toEqual([{ kind: 'release', dueAt: 0, keepHost: false, leaseUntil: undefined, streak: undefined }]);
    expect(of('record')[0]?.record).toMatchObject({ state: 'skipped', errorCode: ErrorCode.RobotsDisallowed });
    expect(order()).toEqual(['release', 'record', 'ack']);
  });

  it('stale lease: drops the job, never releases, never records or acks', async () => {
    f.gate = [{ kind: 'stale' }];
    expect(await processFetchJob(deps(), job())).toEqual({ outcome: 'stale' });
    expect(of('release')).toHaveLength(0);
    expect(of('record')).toHaveLength(0);
    expect(of('ack')).toHaveLength(0);
  });

  it('host paused by an operator: drops the job (the gate requeued its URL), never fetches, records or acks', async () => {
    f.gate = [{ kind: 'paused' }];
    expect(await processFetchJob(deps(), job())).toEqual({ outcome: 'stale' });
    expect(of('fetch')).toHaveLength(0);
    expect(of('release')).toHaveLength(0);
    expect(of('record')).toHaveLength(0);
    expect(of('ack')).toHaveLength(0);
  });

  it('a host due in a moment: the gate is asked as of its due time, and the fetch waits for it', async () => {
    const due = T0 + GATE_ASK_AHEAD_MS - 1;
    // The test's clock only moves when told: it reaches the due time 30 ms (real time) from now,
    // and passes it 30 ms later.
    setTimeout(() => f.clock.advance(GATE_ASK_AHEAD_MS - 1), 30);
    setTimeout(() => f.clock.advance(1), 60);
    const result = await processFetchJob(deps(), job(1, 3, { t: due }));
    expect(result).toMatchObject({ outcome: 'done' });
    expect(of('acquire')).toEqual([{ kind: 'acquire', at: due }]);
    const [fetched] = of('fetch');
    // Past the due millisecond, not in it (the clock counts whole milliseconds).
    expect(fetched?.at).toBeGreaterThan(due);
  });

  it('measures each fetch\'s lateness from the later of the host\'s due time and its dispatch due time', async () => {
    const seen: number[] = [];
    const d = { ...deps(), timings: { record: (_name: 'fetchLateness', s: number) => void seen.push(s) } };
    // The host was due 300 ms ago, and the job was dispatched as of 200 ms ago (the host idle until then).
    f.gate.push({ kind: 'ok', dueAt: T0 - 300, health: { streak: 0, backoffMs: 0 } });
    await processFetchJob(d, job(1, 3, { t: T0 - 200 }));
    // A deferred job: its dispatch due time is old, the host's own due time is what counts.
    f.gate.push({ kind: 'ok', dueAt: T0 - 40, health: { streak: 0, backoffMs: 0 } });
    await processFetchJob(d, job(1, 3, { t: T0 - 5000 }));
    expect(seen).toEqual([0.2, 0.04]);
  });

  it('a host due later than a round trip ahead: the gate is asked as of now', async () => {
    f.gate = [{ kind: 'not-due', at: T0 + 60_000 }];
    await processFetchJob(deps(), job(1, 3, { t: T0 + 60_000 }));
    expect(of('acquire')).toEqual([{ kind: 'acquire' }]);
    expect(of('fetch')).toHaveLength(0);
  });

  it('host busy or not due: defers to (a little before) its due time without releasing it', async () => {
    f.gate = [{ kind: 'busy', at: T0 + 5000 }];
    expect(await processFetchJob(deps(), job())).toEqual({ outcome: 'defer', until: T0 + 5000 - 50 });
    f.gate = [{ kind: 'not-due', at: T0 + 9000 }];
    expect(await processFetchJob(deps(), job())).toEqual({ outcome: 'defer', until: T0 + 9000 - 50 });
    expect(of('release')).toHaveLength(0);
    expect(of('fetch')).toHaveLength(0);
  });

  it('robots.txt fetched now: that was the turn; keeps the host for this lease until the next turn', async () => {
    f.robots = null;
    const result = await processFetchJob(deps(), job());
    expect(result).toMatchObject({ outcome: 'defer' });
    const [release] = of('release');
    expect(release).toMatchObject({ keepHost: true });
    expect(release?.dueAt).toBeGreaterThanOrEqual(T0 + DELAY);
    expect(of('release')).toHaveLength(1);
    expect(of('fetch')).toHaveLength(0);
    expect(of('record')).toHaveLength(0);
    expect(of('ack')).toHaveLength(0);
  });

  it('robots.txt fetched now says the URL is disallowed... for the next URL; this one is allowed and waits its turn', async () => {
    f.robots = null;
    await processFetchJob(deps(), job());
    expect(f.robots).toMatchObject({ kind: 'rules' });
  });

  it('robots.txt unavailable (5xx): retries with the lease kept alive, then dead-letters with a failed record', async () => {
    f.robots = null;
    f.robotsFetch = async () => ({ kind: 'response', status: 503, body: Buffer.alloc(0), finalUrl: `http://${HOST}/robots.txt`, redirects: 0 }) as never;
    const first = await processFetchJob(deps(), job(1, 2));
    expect(first).toMatchObject({ outcome: 'retry' });
    const [release] = of('release');
    expect(release?.leaseUntil).toBeGreaterThan(T0 + 300_000);
    expect(release?.streak).toBe(1);
    expect(of('ack')).toHaveLength(0);

    f.events = [];
    f.robots = null;
    const last = await processFetchJob(deps(), job(2, 2));
    expect(last).toMatchObject({ outcome: 'dead', reason: expect.stringContaining(ErrorCode.RobotsUnavailable) });
    expect(of('release')).toHaveLength(1);
    expect(of('record')[0]?.record).toMatchObject({ state: 'failed', errorCode: ErrorCode.RobotsUnavailable });
    expect(order()).toEqual(['release', 'record', 'ack']);
  });

  it('a 200 page: releases the host (due = response end + delay) before storing, then discovers, records and acks', async () => {
    const result = await processFetchJob(deps(), job());
    expect(result).toMatchObject({ outcome: 'done', summary: { status: 200, handedOff: expect.any(String) } });
    // The lease runs a full TRAWL_LEASE_MS from the end of the fetch.
    expect(of('release')).toEqual([{ kind: 'release', dueAt: T0 + 20 + DELAY, keepHost: false, leaseUntil: T0 + 300_000, streak: 0 }]);
    // Stored: the body (by the fetch stage, before the hand-off); not the page's text, which the
    // stored body gives back (TRAWL_CONTENT_STORE_TEXT off).
    expect(order()).toEqual(['fetch', 'release', 'store', 'discover', 'record', 'ack']);
    expect(f.events.findIndex((e) => e.kind === 'handoff')).toBe(f.events.findIndex((e) => e.kind === 'store') + 1);
    expect(of('state')).toHaveLength(0); // a first delivery does not ask PostgreSQL
    expect(of('clear')).toHaveLength(0); // recorded: the lease's fetched mark stays until the ack
    expect(of('discover')[0]?.urls.sort()).toEqual([`http://${HOST}/b`, `http://${HOST}/c`]);
    expect(of('discover')[0]?.recheck).toBe(false);
    expect(of('record')[0]?.record).toMatchObject({ state: 'done', httpStatus: 200, storageKey: expect.any(String) });
    expect(of('record')[0]?.record.text?.textKey).toBeNull();
  });

  it('a 200 page under TRAWL_CONTENT_STORE_TEXT: its text stored beside the body, before the record', async () => {
    await processFetchJob(deps({ storeText: true }), job());
    expect(order()).toEqual(['fetch', 'release', 'store', 'store', 'discover', 'record', 'ack']);
    expect(of('record')[0]?.record.text?.textKey).toMatch(/^sha256:/);
  });

  it('a redirect: queues the target as a new URL in its source\'s band, records the redirect, acks', async () => {
    f.fetch = async () => response(301, { location: `http://${HOST}/moved`, contentType: null, headers: {} });
    const result = await processFetchJob(deps(), job(1, 3, { b: 6 }));
    expect(result).toMatchObject({ outcome: 'done' });
    expect(of('discover')[0]?.urls).toEqual([`http://${HOST}/moved`]);
    expect(of('discover')[0]?.bands).toEqual([6]);
    expect(of('record')[0]?.record).toMatchObject({ httpStatus: 301, redirectTo: `http://${HOST}/moved` });
    expect(of('release')).toHaveLength(1);
    expect(order().slice(-2)).toEqual(['record', 'ack']);
  });

  it('a 404: recorded as done with its status, never retried', async () => {
    f.fetch = async () => response(404);
    expect(await processFetchJob(deps(), job())).toMatchObject({ outcome: 'done', summary: { status: 404 } });
    expect(of('record')[0]?.record).toMatchObject({ state: 'done', httpStatus: 404 });
    expect(of('release')).toHaveLength(1);
    expect(order().slice(-2)).toEqual(['record', 'ack']);
  });

  it('a 503 with Retry-After: the host is due no earlier than the date, the URL retries, nothing is acked', async () => {
    f.fetch = async () => response(503, { headers: { 'retry-after': '30' } });
    const result = await processFetchJob(deps(), job(1, 3));
    expect(result).toMatchObject({ outcome: 'retry' });
    const [release] = of('release');
    expect(release?.dueAt).toBeGreaterThanOrEqual(T0 + 30_000);
    expect(release?.streak).toBe(1);
    expect(of('record')).toHaveLength(0);
    expect(of('ack')).toHaveLength(0);
  });

  it('a network error on the last attempt: releases with back-off, records failed, acks, dead-letters', async () => {
    f.fetch = async () => {
      throw new TrawlError(ErrorCode.FetchNetwork, 'ECONNRESET', { action: 'retry' });
    };
    const result = await processFetchJob(deps(), job(3, 3));
    expect(result).toEqual({ outcome: 'dead', reason: `${ErrorCode.FetchNetwork}: ECONNRESET (after 3 attempts)` });
    expect(of('release')).toHaveLength(1);
    expect(of('release')[0]?.streak).toBe(1);
    expect(of('record')[0]?.record).toMatchObject({ state: 'failed', errorCode: ErrorCode.FetchNetwork });
    expect(order()).toEqual(['fetch', 'release', 'record', 'ack']);
  });

  it('the SSRF guard refuses the address: the host was not contacted (due now), the URL is skipped', async () => {
    f.fetch = async () => {
      throw new TrawlError('ERR_SSRF_BLOCKED' as ErrorCode, 'private address', { action: 'skip' });
    };
    const result = await processFetchJob(deps(), job());
    expect(result).toMatchObject({ outcome: 'done', summary: { skipped: 'ERR_SSRF_BLOCKED' } });
    expect(of('release')).toEqual([{ kind: 'release', dueAt: T0, keepHost: false, leaseUntil: undefined, streak: undefined }]);
    expect(order()).toEqual(['fetch', 'release', 'record', 'ack']);
  });

  it('every proxy of the host\'s tier is out: the host was not contacted (due now, health untouched), the URL retries', async () => {
    f.fetch = async () => {
      throw new TrawlError(ErrorCode.ProxyUnavailable, 'every proxy of tier dc is out', { action: 'retry', retryAt: T0 + 30_000 });
    };
    const result = await processFetchJob(deps(), job(1, 3));
    expect(result).toMatchObject({ outcome: 'retry' });
    expect(of('release')).toMatchObject([{ kind: 'release', dueAt: T0, keepHost: false, streak: undefined }]);
    expect(of('record')).toHaveLength(0);
  });

  it('storing fails after a good fetch: the host stays released once, the lease is extended, the job retries', async () => {
    f.store = async () => {
      throw new Error('EIO');
    };
    const result = await processFetchJob(deps(), job(1, 3));
    expect(result).toMatchObject({ outcome: 'retry' });
    expect(of('release')).toHaveLength(1);
    expect(of('extend')).toHaveLength(1);
    expect(of('extend')[0]?.until).toBeGreaterThan(T0 + 300_000);
    expect(of('ack')).toHaveLength(0);
    // The fetch is not recorded: the retry may fetch again at once.
    expect(of('clear')).toHaveLength(1);
  });

  it('storing the body fails on the last attempt: recorded failed and acked, so the URL is not fetched again and again', async () => {
    f.store = async () => {
      throw new Error('EIO');
    };
    const result = await processFetchJob(deps(), job(3, 3));
    expect(result).toMatchObject({ outcome: 'dead' });
    expect(of('record')[0]?.record).toMatchObject({ state: 'failed', errorCode: ErrorCode.Store });
    // Nothing was handed off: the page could not be kept.
    expect(of('handoff')).toHaveLength(0);
    expect(order()).toEqual(['fetch', 'release', 'store', 'record', 'ack']);
  });

  it('a fatal store error stops the job with the error: host released once, nothing acked', async () => {
    f.store = async () => {
      throw new TrawlError(ErrorCode.Store, 'read-only file system', { action: 'fatal' });
    };
    await expect(processFetchJob(deps(), job())).rejects.toThrow('read-only file system');
    expect(of('release')).toHaveLength(1);
    expect(of('ack')).toHaveLength(0);
  });

  it('a full disk (ENOSPC) is fatal too, never retried as if transient', async () => {
    f.store = async () => {
      throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
    };
    await expect(processFetchJob(deps(), job())).rejects.toMatchObject({ code: ErrorCode.Store, action: 'fatal' });
    expect(of('release')).toHaveLength(1);
    expect(of('ack')).toHaveLength(0);
    expect(of('clear')).toHaveLength(1);
  });

  it('the record cannot be written: the fetch job is done (handed off), the page waits on its stream for a retry, the lease is never acked', async () => {
    f.record = async () => {
      throw new Error('connection terminated');
    };
    expect(await processFetchJob(deps(), job())).toMatchObject({ outcome: 'done', summary: { handedOff: expect.any(String) } });
    expect(of('fetch')).toHaveLength(1);
    expect(of('release')).toHaveLength(1);
    expect(of('ack')).toHaveLength(0);
  });

  it('PostgreSQL refuses the page\'s record: the URL is recorded failed with the reason and acked', async () => {
    f.record = async (record) => (record.state === 'done' ? 'ERR_DATABASE: PostgreSQL refused the row: invalid byte sequence [SQLSTATE 22021]' : undefined);
    const result = await processFetchJob(deps(), job());
    expect(result).toMatchObject({ outcome: 'done', summary: { handedOff: expect.any(String) } });
    expect(of('record').map((r) => r.record.state)).toEqual(['done', 'failed']);
    expect(of('record')[1]?.record).toMatchObject({ errorCode: ErrorCode.Database, canonicalUrl: null });
    expect(order().slice(-3)).toEqual(['record', 'record', 'ack']);
    expect(of('release')).toHaveLength(1);
  });

  it('its server address is not free: keeps the host (due at the reserved time), keeps the lease past it, fetches nothing, defers', async () => {
    const turns: Array<{ kind: 'wait'; at: number }> = [{ kind: 'wait', at: T0 + 60_000 }];
    const pipeline = { ...deps(), addresses: { ...handedSlots, enter: async () => turns.shift() ?? { kind: 'go' as const, leave: () => undefined, handOver: () => [] } } };
    expect(await processFetchJob(pipeline, job())).toEqual({ outcome: 'defer', until: T0 + 60_000 - 50 });
    expect(of('release')).toEqual([{ kind: 'release', dueAt: T0 + 60_000, keepHost: true, leaseUntil: T0 + 60_000 + 300_000, streak: undefined }]);
    expect(of('fetch')).toHaveLength(0);
    expect(of('robots')).toHaveLength(0);
  });

  it('a reserved time within the gate\'s short wait is waited for in the worker, then the page is fetched', async () => {
    const asked: number[] = [];
    const turns: Array<{ kind: 'wait'; at: number }> = [{ kind: 'wait', at: T0 + 40 }];
    const pipeline = {
      ...deps(),
      addresses: {
        ...handedSlots,
        enter: async () => {
          asked.push(f.clock.now());
          return turns.shift() ?? { kind: 'go' as const, leave: () => undefined, handOver: () => [] };
        },
      },
    };
    const started = performance.now();
    expect(await processFetchJob(pipeline, job())).toMatchObject({ outcome: 'done' });
    expect(performance.now() - started).toBeGreaterThanOrEqual(39);
    expect(asked).toHaveLength(2);
    expect(of('fetch')).toHaveLength(1);
  });

  it('leaves its address once the request has ended, with the host\'s next due time; also when robots.txt was the request, or it threw', async () => {
    const left: number[] = [];
    const pipeline = { ...deps(), addresses: { ...handedSlots, enter: async () => ({ kind: 'go' as const, leave: (nextAt: number) => void left.push(nextAt), handOver: () => [] }) } };
    await processFetchJob(pipeline, job());
    expect(left).toEqual([T0 + 20 + DELAY]);
    expect(f.events.findIndex((e) => e.kind === 'fetch')).toBeLessThan(f.events.findIndex((e) => e.kind === 'release'));

    f.robots = null;
    await processFetchJob(pipeline, job());
    expect(left[1]).toBeGreaterThanOrEqual(T0 + DELAY);

    f.fetch = async () => {
      throw new Error('boom');
    };
    await processFetchJob(pipeline, job()).catch(() => undefined);
    expect(left).toHaveLength(3);
  });

  it('an exception before the fetch completes still frees the host exactly once', async () => {
    f.fetch = async () => {
      throw new TypeError('bug');
    };
    // A plain error counts as transient: retried, with the host released once.
    expect(await processFetchJob(deps(), job(1, 3))).toMatchObject({ outcome: 'retry' });
    expect(of('release')).toHaveLength(1);
  });
});

/** The process stage alone: an entry tried again from the stored body, never fetched again. */
describe('processFetchJob: a host that refuses the crawler', () => {
  const tiers = ['direct', 'dc', 'res'];
  let blocked: Array<{ host: string; tier: string; action: string; toTier: string | null }>;
  let paused: Array<{ host: string; reason: string }>;
  let healths: Array<{ blocks?: number; level?: number } | undefined>;
  let robotsLevels: number[];

  /** The pipeline with a block detector over `tierCount` proxy tiers (0: no proxies). */
  const blockingDeps = (tierCount: number): PipelineDeps => {
    const base = deps();
    const release = base.frontier.release;
    return {
      ...base,
      frontier: {
        ...base.frontier,
        release: async (ticket, dueAt, options = {}) => {
          healths.push(options.health === undefined ? undefined : { blocks: options.health.blocks, level: options.health.level });
          return release(ticket, dueAt, options);
        },
      },
      robots: {
        get: async (_origin, level = 0) => {
          robotsLevels.push(level);
          return level === 0 ? f.robots : null;
        },
        set: async () => undefined,
      },
      blocking: {
        options: { threshold: 3, bodyMarkers: ['px-captcha'], urlMarkers: ['/cdn-cgi/challenge-platform/'] },
        tierOf: (_host, level) => (tierCount === 0 ? { tier: null, canEscalate: false } : { tier: tiers[Math.min(level, tierCount - 1)] ?? null, canEscalate: level < tierCount - 1 }),
        pause: async (host, reason) => void paused.push({ host, reason }),
        onBlocked: (event) => void blocked.push({ host: event.host, tier: event.tier, action: event.action, toTier: event.toTier }),
      },
    };
  };
  const at = (blocks: number, level = 0): GateDecision => ({ kind: 'ok', dueAt: 0, health: { streak: 0, backoffMs: 0, blocks, level } });

  beforeEach(() => {
    blocked = [];
    paused = [];
    healths = [];
    robotsLevels = [];
  });

  it('with a tier above, a 403 is tried again (an attempt), nothing recorded, the run counted', async () => {
    f.fetch = async () => response(403);
    f.gate = [at(0)];
    const result = await processFetchJob(blockingDeps(3), job(1, 4));
    expect(result).toMatchObject({ outcome: 'retry', reason: `${ErrorCode.HttpBlocked}: refused: HTTP 403` });
    expect(healths).toEqual([{ blocks: 1, level: 0 }]);
    expect(of('record')).toHaveLength(0);
    expect(blocked).toEqual([]);
  });

  it('the refusal that makes the threshold moves the host up a tier: the job keeps the host and runs again (no attempt spent)', async () => {
    f.fetch = async () => response(403);
    f.gate = [at(2)];
    const result = await processFetchJob(blockingDeps(3), job(1, 4));
    expect(result).toMatchObject({ outcome: 'defer' });
    expect(of('release')[0]).toMatchObject({ keepHost: true });
    expect(healths).toEqual([{ blocks: 0, level: 1 }]);
    expect(blocked).toEqual([{ host: HOST, tier: 'direct', action: 'escalated', toTier: 'dc' }]);
    expect(of('record')).toHaveLength(0);
    expect(of('ack')).toHaveLength(0);
  });

  it('a host moved up reads robots.txt again through its new tier before any page, then fetches through it', async () => {
    f.gate = [at(0, 1), at(0, 1)];
    const first = await processFetchJob(blockingDeps(3), job());
    expect(first).toMatchObject({ outcome: 'defer' });
    expect(robotsLevels).toEqual([0, 1]);
    expect(of('robots')).toHaveLength(1);
    expect(of('fetch')).toHaveLength(0);
    f.robots = rulesEntry('User-agent: *\nAllow: /\n');
    const blockingPipeline = blockingDeps(3);
    blockingPipeline.robots = { get: async () => f.robots, set: async () => undefined };
    expect(await processFetchJob(blockingPipeline, job())).toMatchObject({ outcome: 'done' });
    expect(of('fetch').map((e) => e.tierLevel)).toEqual([1]);
  });

  it('an answer that is no refusal ends the run', async () => {
    f.gate = [at(2, 1)];
    await processFetchJob(blockingDeps(3), job());
    expect(healths).toEqual([{ blocks: 0, level: 1 }]);
  });

  it('without proxies a 403 is the page\'s answer (recorded once), and a run of them never pauses the host', async () => {
    f.fetch = async () => response(403);
    f.gate = [at(7)];
    expect(await processFetchJob(blockingDeps(0), job())).toMatchObject({ outcome: 'done', summary: { status: 403 } });
    expect(of('record')[0]?.record).toMatchObject({ httpStatus: 403 });
    expect(healths).toEqual([{ blocks: 8, level: 0 }]);
    expect(paused).toEqual([]);
  });

  it('challenge pages with no tier left pause the host with its reason; the page is not recorded and no attempt is spent', async () => {
    f.fetch = async () => response(200, { body: Buffer.from('<html><div id="px-captcha"></div></html>') });
    f.gate = [at(1)];
    const pipeline = blockingDeps(0);
    expect(await processFetchJob(pipeline, job())).toMatchObject({ outcome: 'retry', reason: expect.stringContaining('a challenge page') });
    f.gate = [at(2)];
    expect(await processFetchJob(pipeline, job())).toMatchObject({ outcome: 'defer' });
    expect(paused).toEqual([{ host: HOST, reason: 'blocked: 3 refusals in a row, the last: a challenge page (HTTP 200, "px-captcha")' }]);
    expect(blocked).toEqual([{ host: HOST, tier: 'none', action: 'paused', toTier: null }]);
    expect(of('record')).toHaveLength(0);
  });

  it('the last tier refusing too pauses the host', async () => {
    f.fetch = async () => response(403);
    f.gate = [at(2, 2)];
    const pipeline = blockingDeps(3);
    pipeline.robots = { get: async () => f.robots, set: async () => undefined };
    expect(await processFetchJob(pipeline, job())).toMatchObject({ outcome: 'defer' });
    expect(paused.map((p) => p.reason)).toEqual(['blocked: 3 refusals in a row, the last: HTTP 403']);
    expect(blocked).toEqual([{ host: HOST, tier: 'res', action: 'paused', toTier: null }]);
  });

  it('a connection reset at once counts as a refusal; one that makes the threshold moves the host up without spending an attempt', async () => {
    f.fetch = async () => {
      throw new TrawlError(ErrorCode.FetchNetwork, 'ECONNRESET', { action: 'retry', details: { errno: 'ECONNRESET' } });
    };
    f.gate = [at(2)];
    expect(await processFetchJob(blockingDeps(2), job(1, 4))).toMatchObject({ outcome: 'defer' });
    expect(blocked).toEqual([{ host: HOST, tier: 'direct', action: 'escalated', toTier: 'dc' }]);
    expect(healths).toEqual([{ blocks: 0, level: 1 }]);
  });

  it('a 429 with Retry-After is throttling, not a refusal', async () => {
    f.fetch = async () => response(429, { headers: { 'retry-after': '5' } });
    f.gate = [at(2)];
    expect(await processFetchJob(blockingDeps(3), job())).toMatchObject({ outcome: 'retry', reason: expect.stringContaining(ErrorCode.HttpThrottled) });
    expect(healths).toEqual([{ blocks: 0, level: 0 }]);
    expect(blocked).toEqual([]);
  });
});

describe('processEntry: retries from the stored body', () => {
  const handed = async (): Promise<string> => {
    // The fetch stage hands the page off; its own processing fails (PostgreSQL away) and leaves the entry.
    const record = f.record;
    f.record = async () => {
      throw new Error('connection terminated');
    };
    await processFetchJob(deps(), job());
    f.record = record;
    f.events = [];
    return f.handed[0] as string;
  };
  const entry = (payload: string, deliveries: number) => ({ partition: 0, id: '1-1', payload, deliveries, urgent: false });

  it('a later delivery records the page from the stored body and acks its lease with the entry, without fetching', async () => {
    const payload = await handed();
    expect(await processEntry({ ...deps(), maxDeliveries: 4 }, entry(payload, 2))).toBe('recorded');
    expect(of('fetch')).toHaveLength(0);
    // The first try may have died between inserting its links and queueing them: they are checked.
    expect(of('discover').map((d) => d.recheck)).toEqual([true]);
    expect(of('record').map((r) => r.record.state)).toEqual(['done']);
    expect(of('ack')).toEqual([{ kind: 'ack', leaseId: 'p0-1' }]);
  });

  it('fails again: left for another try until the last delivery, which records the page as failed and acks it', async () => {
    const payload = await handed();
    f.record = async (record) => {
      if (record.state === 'done') throw new Error('connection terminated');
    };
    expect(await processEntry({ ...deps(), maxDeliveries: 3 }, entry(payload, 2))).toBe('retry');
    expect(of('ack')).toHaveLength(0);
    expect(await processEntry({ ...deps(), maxDeliveries: 3 }, entry(payload, 3))).toBe('recorded');
    expect(of('record').at(-1)?.record).toMatchObject({ state: 'failed' });
    expect(of('ack')).toHaveLength(1);
    expect(of('fetch')).toHaveLength(0);
  });

  it('a body the store lost: recorded as failed with the reason at once (retrying cannot bring it back)', async () => {
    const payload = await handed();
    const d = deps();
    expect(await processEntry({ ...d, store: { ...d.store, get: async () => null }, maxDeliveries: 4 }, entry(payload, 1))).toBe('recorded');
    expect(of('record')[0]?.record).toMatchObject({ state: 'failed', errorCode: ErrorCode.Store });
    expect(of('fetch')).toHaveLength(0);
  });

  it('an urgent entry (its host waits on its links) is analysed and its links discovered as urgent; a plain one is not', async () => {
    const payload = await handed();
    const asked: (boolean | undefined)[] = [];
    const analyzer = { ...inlineAnalyzer, analyze: async (input: PageAnalysisInput, options?: { urgent?: boolean }) => (asked.push(options?.urgent), analyzePage(input)) };
    expect(await processEntry({ ...deps(), analyzer, maxDeliveries: 4 }, { ...entry(payload, 1), id: 'u:1-1', urgent: true })).toBe('recorded');
    expect(await processEntry({ ...deps(), analyzer, maxDeliveries: 4 }, entry(payload, 1))).toBe('recorded');
    expect(asked).toEqual([true, false]);
    expect(of('discover').map((d) => d.urgent)).toEqual([true, false]);
  });

  it("an urgent page's links are discovered before its duplicate lookup answers, when the policy follows duplicates' links", async () => {
    const payload = await handed();
    // A duplicate lookup that answers only when told: what was discovered while it waited?
    const lookup = () => {
      let answer = () => undefined as void;
      const answered = new Promise<void>((resolve) => (answer = resolve));
      const seenBefore: number[] = [];
      const duplicates = {
        classify: async () => {
          seenBefore.push(of('discover').length);
          await answered;
          return { verdict: null, ofUrl: null, earlier: null };
        },
      };
      return { duplicates, answer, seenBefore };
    };
    const run = async (urgent: boolean) => {
      f.events = [];
      const { duplicates, answer, seenBefore } = lookup();
      const processing = processEntry({ ...deps(), duplicates, maxDeliveries: 4 }, { ...entry(payload, 1), urgent });
      await vi.waitFor(() => expect(seenBefore).toHaveLength(1));
      await new Promise((resolve) => setTimeout(resolve, 20));
      const discoveredWhileWaiting = of('discover').length;
      answer();
      expect(await processing).toBe('recorded');
      expect(of('discover')).toHaveLength(1);
      expect(of('discover')[0]?.urls.length).toBeGreaterThan(0);
      // The links go before the record (and the ack), whichever way.
      expect(f.events.findIndex((e) => e.kind === 'discover')).toBeLessThan(f.events.findIndex((e) => e.kind === 'record'));
      return discoveredWhileWaiting;
    };
    expect(await run(true)).toBe(1);
    expect(await run(false)).toBe(0);
    // Not following a duplicate's links: even an urgent page's wait for its verdict.
    f.policy = { ...(f.policy as ResolvedPolicy), dedup: { ...(f.policy as ResolvedPolicy).dedup, nearDupFollowLinks: false } };
    expect(await run(true)).toBe(0);
  });

  it('an entry that is not a handed page: dropped and acknowledged, nothing recorded', async () => {
    const acked: (string | undefined)[] = [];
    const d = deps();
    const outcome = await processEntry({ ...d, acks: { ack: async (_p, _lease, id) => void acked.push(id) }, maxDeliveries: 4 }, entry('{"not":"a page"}', 1));
    expect(outcome).toBe('dropped');
    expect(acked).toEqual(['1-1']);
    expect(of('record')).toHaveLength(0);
  });
});

/**
 * Jobs that may repeat finished work: the crash windows between a fetch, its record and its ack,
 * and a job outliving its lease.
 */
describe('processFetchJob: repeated work and slow jobs', () => {
  it('a job redelivered after its worker died between the record and the ack: recorded already, so acked without fetching', async () => {
    f.urlState = 'done';
    const result = await processFetchJob(deps(), job(1, 3, {}, true));
    expect(result).toEqual({ outcome: 'done', summary: { alreadyRecorded: 'done' } });
    expect(of('fetch')).toHaveLength(0);
    expect(of('acquire')).toHaveLength(0);
    // The host claim dispatch gave the lease is handed back, its due time untouched.
    expect(of('release')).toEqual([{ kind: 'release', dueAt: 0, keepHost: false, leaseUntil: undefined, streak: undefined }]);
    expect(order()).toEqual(['release', 'ack']);
  });

  it('a URL back from an expired lease (flagged Verify) that its dead worker had recorded is not fetched again', async () => {
    f.urlState = 'done';
    expect(await processFetchJob(deps(), job(1, 3, { f: UrlFlag.Verify }))).toMatchObject({ outcome: 'done', summary: { alreadyRecorded: 'done' } });
    expect(of('fetch')).toHaveLength(0);
    expect(of('ack')).toHaveLength(1);
  });

  it('a Verify copy whose twin was recorded between its first check and the gate is not fetched: asked again with the host held', async () => {
    f.urlState = 'queued';
    const d = deps();
    d.frontier.acquire = async () => {
      f.events.push({ kind: 'acquire' });
      f.urlState = 'done'; // the twin recorded and acknowledged meanwhile: the gate lets this one through
      return { kind: 'ok', dueAt: 0, health: { streak: 0, backoffMs: 0 } };
    };
    expect(await processFetchJob(d, job(1, 3, { f: UrlFlag.Verify }))).toMatchObject({ outcome: 'done', summary: { alreadyRecorded: 'done' } });
    expect(of('fetch')).toHaveLength(0);
    expect(of('state')).toHaveLength(2);
    // The host is handed back with its due time untouched (nothing was fetched), then the lease acked.
    expect(of('release')).toEqual([{ kind: 'release', dueAt: 0, keepHost: false, leaseUntil: undefined, streak: undefined }]);
    expect(order()).toEqual(['release', 'ack']);
  });

  it('a copy without the flag that the gate tells to verify (a Verify twin went first and was acknowledged) asks PostgreSQL and is not fetched', async () => {
    f.urlState = 'done';
    const d = deps();
    let verify = true;
    d.frontier.acquire = async () => {
      f.events.push({ kind: 'acquire' });
      return { kind: 'ok', dueAt: 0, health: { streak: 0, backoffMs: 0 }, ...(verify ? { verify: true as const } : {}) };
    };
    expect(await processFetchJob(d, job(1, 3))).toMatchObject({ outcome: 'done', summary: { alreadyRecorded: 'done' } });
    expect(of('fetch')).toHaveLength(0);
    // Asked once, with the host held (a job without the flag does not ask before the gate).
    expect(of('state')).toHaveLength(1);
    expect(order()).toEqual(['release', 'ack']);
    // The gate silent: the same job fetches without asking.
    f.events.length = 0;
    verify = false;
    expect(await processFetchJob(d, job(1, 4))).toMatchObject({ outcome: 'done', summary: { status: 200 } });
    expect(of('state')).toHaveLength(0);
    expect(of('fetch')).toHaveLength(1);
  });

  it('a redelivered job whose URL was not recorded (the worker died between fetch and record) fetches it again', async () => {
    f.urlState = 'queued';
    expect(await processFetchJob(deps(), job(1, 3, { f: UrlFlag.Verify }, true))).toMatchObject({ outcome: 'done', summary: { status: 200 } });
    // Asked before the gate and again once the host is held.
    expect(of('state')).toHaveLength(2);
    expect(of('fetch')).toHaveLength(1);
    expect(order()).toEqual(['fetch', 'release', 'store', 'discover', 'record', 'ack']);
  });

  it('a dead-lettered URL re-run (state failed) is fetched', async () => {
    f.urlState = 'failed';
    expect(await processFetchJob(deps(), job(1, 3, {}, true))).toMatchObject({ outcome: 'done', summary: { status: 200 } });
    expect(of('fetch')).toHaveLength(1);
  });

  it('writes the record only once the page\'s links are in the frontier (so "recorded" implies "discovered")', async () => {
    let discovered = false;
    const d = deps();
    d.discovery = {
      add: async (candidates) => {
        await new Promise((r) => setTimeout(r, 50));
        discovered = true;
        return { queued: candidates.length, known: 0 };
      },
    };
    f.record = async () => {
      expect(discovered).toBe(true);
    };
    expect(await processFetchJob(d, job())).toMatchObject({ outcome: 'done' });
    expect(of('record')).toHaveLength(1);
    expect(discovered).toBe(true);
  });

  it('renews its lease every third of TRAWL_LEASE_MS while slow work after the fetch goes on, and stops when done', async () => {
    const d = { ...deps(), leaseMs: 150 };
    // Storing takes 400 ms of real time (the renewal timer is real); the clock moves with it.
    f.store = () => new Promise((resolve) => setTimeout(resolve, 400));
    const ticking = setInterval(() => f.clock.advance(10), 10);
    try {
      expect(await processFetchJob(d, job())).toMatchObject({ outcome: 'done' });
    } finally {
      clearInterval(ticking);
    }
    const extends_ = of('extend');
    expect(extends_.length).toBeGreaterThanOrEqual(5);
    expect(extends_.map((e) => e.until)).toEqual([...extends_.map((e) => e.until)].sort((a, b) => a - b));
    expect((extends_.at(-1) as { until: number }).until).toBeGreaterThan(T0 + 300);
    const after = extends_.length;
    await new Promise((r) => setTimeout(r, 150));
    expect(of('extend')).toHaveLength(after);
  });
});

describe('rendering in the fetch stage, under the host gate', () => {
  const SHELL = '<html><body><div id="root"></div><script src="/app.js"></script></body></html>';
  const PLAIN = '<html><body><p>Plain words.</p><a href="/b">b</a></body></html>';
  const RENDERED = '<html><body><div id="root"><a href="/x">x</a><a href="/y">y</a></div></body></html>';

  /** Render deps over a fake browser whose page asks for its script and its data through the pipeline's fetch. */
  function withRenderer(answer: (url: string, options: RenderOptions) => Promise<string | Awaited<ReturnType<FakeRenderer['render']>>>, mode: RenderDeps['mode'] = 'auto') {
    const renderer = new FakeRenderer(answer);
    const render: RenderDeps = { renderer, mode, learner: new RenderLearner({ ...DEFAULT_LEARNER_SETTINGS, sampleSize: 0 }, f.clock), timeoutMs: 5000, maxHoldMs: 65_000 };
    return { d: { ...deps(), render }, renderer };
  }

  /** Responses by URL: the page first, then what the browser asks for. */
  function serve(pages: Record<string, string>): void {
    f.fetch = async () => {
      const url = (of('fetch').at(-1) as { url: string }).url;
      const body = pages[url];
      return response(body === undefined ? 404 : 200, { url, body: Buffer.from(body ?? '') });
    };
  }

  /** The manual clock moves on while the host's turns wait for it. */
  async function ticking<T>(work: () => Promise<T>): Promise<T> {
    const timer = setInterval(() => f.clock.advance(100), 1);
    try {
      return await work();
    } finally {
      clearInterval(timer);
    }
  }

  const lastRecord = () => (of('record').at(-1) as { record: FetchRecord }).record;

  it('an app shell is rendered: its requests are fetched one at a time, each a delay after the last response, and the host released after the last', async () => {
    serve({ [URL_]: SHELL, [`http://${HOST}/app.js`]: 'void 0', [`http://${HOST}/data.json`]: '{}' });
    const { d, renderer } = withRenderer(async (_url, options) => {
      await options.fetch(`http://${HOST}/app.js`, { resourceType: 'script', method: 'GET', headers: {}, signal: new AbortController().signal });
      await options.fetch(`http://${HOST}/data.json`, { resourceType: 'fetch', method: 'GET', headers: {}, signal: new AbortController().signal });
      return RENDERED;
    });
    expect(await ticking(() => processFetchJob(d, job()))).toMatchObject({ outcome: 'done' });
    expect(renderer.calls).toHaveLength(1);
    expect(renderer.calls[0]?.options.document?.body.toString()).toBe(SHELL);
    const fetches = of('fetch');
    expect(fetches.map((e) => e.url)).toEqual([URL_, `http://${HOST}/app.js`, `http://${HOST}/data.json`]);
    // Each response ends 20 ms after its start: the next request starts at least the delay after that.
    for (let i = 1; i < fetches.length; i++) expect((fetches[i] as { at: number }).at).toBeGreaterThan((fetches[i - 1] as { at: number }).at + 20 + DELAY);
    const releases = of('release');
    expect(releases).toHaveLength(1);
    expect(releases[0]?.dueAt).toBe((fetches.at(-1) as { at: number }).at + 20 + DELAY);
    // Links, text and fingerprint from the rendered DOM; the row describes the HTTP response.
    expect(of('discover').flatMap((e) => e.urls).sort()).toEqual([`http://${HOST}/x`, `http://${HOST}/y`]);
    expect(lastRecord()).toMatchObject({ render: { rendered: true, reason: 'empty-app-root' }, contentLength: SHELL.length, contentHash: String(SHELL.length), linksFound: 2 });
    expect(f.handed[0]).toContain('"rendered":true');
  });

  it('a page without scripts is never rendered (auto), and the reason is recorded', async () => {
    serve({ [URL_]: PLAIN });
    const { d, renderer } = withRenderer(async () => RENDERED);
    await processFetchJob(d, job());
    expect(renderer.calls).toHaveLength(0);
    expect(lastRecord()).toMatchObject({ render: { rendered: false, reason: 'no-scripts' } });
    expect(of('discover').flatMap((e) => e.urls)).toEqual([`http://${HOST}/b`]);
  });

  it('refuses what robots.txt disallows on the host; another host is left to the fetch, which refuses it when its gate cannot be borrowed', async () => {
    f.robots = rulesEntry('User-agent: *\nDisallow: /private\n');
    serve({ [URL_]: SHELL, 'http://other.example/lib.js': 'void 0' });
    const answers: unknown[] = [];
    let otherFetch: unknown;
    const { d } = withRenderer(async (_url, options) => {
      for (const url of [`http://other.example/lib.js`, `http://${HOST}/private/data.json`, `http://${HOST}/app.js`]) answers.push(await options.beforeRequest?.(url, 'script'));
      otherFetch = await options.fetch('http://other.example/lib.js', { resourceType: 'script', method: 'GET', headers: {}, signal: new AbortController().signal }).catch((error: unknown) => error);
      return RENDERED;
    });
    await processFetchJob(d, job());
    expect(answers).toEqual([{ allow: true }, { allow: false, reason: expect.stringMatching(/^robots/) }, { allow: true }]);
    // This frontier never lends a host (paused): refused, recorded as blocked by the renderer, never fetched.
    expect(otherFetch).toBeInstanceOf(RequestRefused);
    expect((otherFetch as RequestRefused).reason).toBe('other-host other.example: paused');
    expect(of('fetch').map((e) => e.url)).toEqual([URL_]);
  });

  it('a failed render keeps the page as fetched: the links of its HTML, and why it was not rendered', async () => {
    serve({ [URL_]: SHELL.replace('<div id="root"></div>', '<div id="root"></div><a href="/b">b</a>') });
    const { d } = withRenderer(async (url) => ({ ok: false, url, finalUrl: url, status: null, error: new TrawlError('ERR_RENDER_TIMEOUT' as never, 'too slow', { action: 'retry' }), requests: [], timings: { queuedMs: 0, openMs: 0, renderMs: 0, totalMs: 0 } }));
    expect(await processFetchJob(d, job())).toMatchObject({ outcome: 'done' });
    expect(lastRecord()).toMatchObject({ render: { rendered: false, reason: 'empty-app-root; render failed: ERR_RENDER_TIMEOUT' } });
    expect(of('discover').flatMap((e) => e.urls)).toEqual([`http://${HOST}/b`]);
  });

  it('a render is ended before the host token could lapse, however long it waits for a browser page', async () => {
    serve({ [URL_]: SHELL });
    const { d, renderer } = withRenderer(
      (url, options) =>
        new Promise((resolve) =>
          options.signal?.addEventListener('abort', () => resolve({ ok: false, url, finalUrl: url, status: null, error: new TrawlError('ERR_RENDER_ABORTED' as never, 'aborted', { action: 'retry' }), requests: [], timings: { queuedMs: 0, openMs: 0, renderMs: 0, totalMs: 0 } })),
        ),
    );
    // A hold of 2.6 s leaves 0.6 s once the 2 s margin is kept.
    const started = Date.now();
    await processFetchJob({ ...d, render: { ...(d.render as RenderDeps), maxHoldMs: 2600 } }, job());
    expect(Date.now() - started).toBeLessThan(5000);
    expect(renderer.calls[0]?.options.timeoutMs).toBe(600);
    expect(lastRecord()).toMatchObject({ render: { rendered: false, reason: 'empty-app-root; render failed: ERR_RENDER_ABORTED' } });
    expect(of('release')).toHaveLength(1);
  });

  it('an operator\'s override for the host comes first: never renders an app shell, always a plain page', async () => {
    serve({ [URL_]: SHELL });
    const { d, renderer } = withRenderer(async () => RENDERED);
    await processFetchJob({ ...d, render: { ...(d.render as RenderDeps), overrides: { of: async () => 'never' } } }, job());
    expect(renderer.calls).toHaveLength(0);
    expect(lastRecord()).toMatchObject({ render: { rendered: false, reason: 'host set to never' } });
    serve({ [URL_]: PLAIN });
    await processFetchJob({ ...d, render: { ...(d.render as RenderDeps), overrides: { of: async () => 'always' } } }, job());
    expect(renderer.calls).toHaveLength(1);
    expect(lastRecord()).toMatchObject({ render: { rendered: true, reason: 'host set to always' } });
  });

  it('`always` renders a plain page too', async () => {
    serve({ [URL_]: PLAIN });
    const { d, renderer } = withRenderer(async () => RENDERED, 'always');
    await processFetchJob(d, job());
    expect(renderer.calls).toHaveLength(1);
    expect(lastRecord()).toMatchObject({ render: { rendered: true, reason: 'always' } });
  });
});

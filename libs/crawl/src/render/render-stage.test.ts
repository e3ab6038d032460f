import { loadConfig } from '@trawl/config';
import { ManualClock } from '@trawl/core';
import type { FetchResult } from '@trawl/fetch';
import { AddressGate, Frontier, type Lease } from '@trawl/frontier';
import { policyFromConfig, resolvePolicy } from '@trawl/model';
import { decodeFetchJob, decodeRenderJob, type FetchJobContext, renderJobDataSchema, type RenderJob, RenderLater, RenderQueue, RenderWorkers } from '@trawl/queue';
import { DEFAULT_LEARNER_SETTINGS, RenderErrorCode, renderError, RenderLearner, type RenderOptions, type RequestRefused } from '@trawl/render';
import { FakeRenderer } from '@trawl/render/testing';
import { testConnection, testRedis, type TestRedis } from '@trawl/redis/testing';
import type { ContentStore } from '@trawl/store';
import { silentLogger } from '@trawl/telemetry';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import type { PipelineDeps } from '../deps.js';
import { type AddressSettings, AddressGroups } from '../fetch/address-step.js';
import { processFetchJob } from '../fetch/fetch-job.js';
import { handOverVerdictOf, type RenderHandOverDeps } from '../fetch/render-hand-over.js';
import type { RenderDeps } from '../fetch/render-step.js';
import { decodeHandedPage } from '../handed-page.js';
import type { FetchRecord } from '../record.js';
import { processRenderJob, RenderHostBusy } from './render-job.js';

/**
 * The hand-over from a fetch stage without a browser to a render stage, against the real frontier
 * scripts and the real render queue: the host stays held from the fetch to the render's last
 * request, the page is never fetched twice, and a render stage that no longer holds the host, or
 * the absence of any, costs the page its rendering and nothing else.
 */
const t: TestRedis = testRedis('render-stage');
const queues: RenderQueue[] = [];
afterAll(async () => {
  await Promise.all(queues.map((q) => q.queue.obliterate({ force: true }).then(() => q.close())));
  await t.cleanup();
});

const T0 = 1_700_000_000_000;
const DELAY = 1000;
const HOST = 'spa.example';
const PAGE = `http://${HOST}/`;
const SHELL = '<html><body><div id="root"></div><script src="/app.js"></script></body></html>';
const RENDERED = '<html><body><div id="root"><a href="/x">x</a><a href="/y">y</a></div></body></html>';

let run = 0;
let clock: ManualClock;
let frontier: Frontier;
let prefix: string;
let fetches: Array<{ url: string; at: number }>;
let records: FetchRecord[];
let counts: Map<string, number>;
let bodies: Map<string, Buffer>;
/** What PostgreSQL says of the page's URL (urls.state). */
let urlState: string;

beforeEach(() => {
  run += 1;
  prefix = `${t.prefix}:${run}`;
  clock = new ManualClock(T0);
  frontier = new Frontier(t.redis, { prefix, partitions: 1, bands: 4, leaseMs: 60_000, fetchHoldMs: 30_000, busyRetryMs: 500, maxUrlsPerHost: 0, clock, holder: 'worker@fetcher:1:a' });
  fetches = [];
  records = [];
  counts = new Map();
  bodies = new Map();
  urlState = 'queued';
});

/** Each response ends 20 ms after it starts; the manual clock moves on while turns wait. */
function response(url: string, body: string): FetchResult {
  const buf = Buffer.from(body);
  return {
    url,
    status: 200,
    headers: { 'content-type': 'text/html' },
    contentType: 'text/html',
    charset: null,
    location: null,
    body: buf,
    truncated: false,
    bodySkipped: false,
    rawBytes: buf.length,
    startedAt: clock.now(),
    firstByteAt: clock.now() + 10,
    endedAt: clock.now() + 20,
    etag: null,
    lastModified: null,
  };
}

function deps(env: Record<string, string> = {}): PipelineDeps {
  const config = loadConfig({ env: { TRAWL_MIN_DELAY_MS: String(DELAY), TRAWL_ADAPTIVE_DELAY_FACTOR: '0', ...env } });
  const policy = resolvePolicy(policyFromConfig(config, [PAGE]));
  const store: ContentStore = {
    put: async (body) => {
      const key = `sha256:${body.length}`;
      bodies.set(key, Buffer.from(body));
      return { key, contentHash: String(body.length), storedBytes: body.length, existed: false };
    },
    get: async (key) => bodies.get(key) ?? null,
    has: async () => false,
    check: async () => undefined,
    close: async () => undefined,
  };
  const pages: Record<string, string> = { [PAGE]: SHELL, [`http://${HOST}/app.js`]: 'void 0' };
  return {
    frontier,
    fetcher: {
      fetch: async (url) => {
        fetches.push({ url, at: clock.now() });
        return response(url, pages[url] ?? '');
      },
      fetchRobots: async () => {
        throw new Error('robots.txt is cached');
      },
    },
    store,
    robots: { get: async () => ({ kind: 'rules', status: 200, body: 'User-agent: *\nAllow: /\n', fetchedAt: T0, expiresAt: T0 + 86_400_000 }), set: async () => undefined },
    discovery: { add: async (candidates) => ({ queued: candidates.length, known: 0 }) },
    records: {
      add: async (record) => {
        records.push(record);
        return null;
      },
    },
    acks: { ack: async () => undefined },
    policy: { get: async () => policy, refresh: async () => policy },
    counters: { add: (name: string, by = 1) => void counts.set(name, (counts.get(name) ?? 0) + by) },
    clock,
    logger: silentLogger,
    retry: { attempts: 4, timeoutAttempts: 2, baseMs: 5000, maxMs: 60_000 },
    leaseMs: 60_000,
    gateWaitMs: 100,
    urlStates: { state: async () => urlState as never },
  };
}

function handOverDeps(alive: () => Promise<boolean>): RenderHandOverDeps & { queue: RenderQueue } {
  const queue = new RenderQueue(testConnection({ name: 'trawl-render-stage-queue' }), prefix);
  queues.push(queue);
  return { mode: 'auto', learner: new RenderLearner({ ...DEFAULT_LEARNER_SETTINGS, sampleSize: 0 }, clock), queue, alive };
}

/** A renderer whose page asks for its script through the pipeline's fetch, as a browser would. */
function renderer(): FakeRenderer {
  return new FakeRenderer(async (_url, options: RenderOptions) => {
    await options.fetch(`http://${HOST}/app.js`, { resourceType: 'script', method: 'GET', headers: {}, signal: new AbortController().signal });
    return RENDERED;
  });
}

const renderDeps = (r: FakeRenderer): RenderDeps => ({ renderer: r, mode: 'auto', learner: new RenderLearner({ ...DEFAULT_LEARNER_SETTINGS, sampleSize: 0 }, clock), timeoutMs: 5000, maxHoldMs: 30_000 });

/** The one URL of the host, claimed as a dispatcher would, and its fetch job. */
async function claimed(): Promise<{ lease: Lease; ctx: FetchJobContext }> {
  await frontier.push([{ host: HOST, url: PAGE, depth: 0, hops: 0, flags: 0, priority: 0.5 }]);
  await frontier.push([{ host: HOST, url: `${PAGE}other`, depth: 0, hops: 0, flags: 0, priority: 0.5 }]);
  const [lease] = (await frontier.claim(0, 1)).leases as [Lease];
  const ctx: FetchJobContext = { id: lease.id, job: decodeFetchJob({ u: lease.url, h: HOST, p: 0, d: 0, x: 0, f: 0, b: lease.band, l: lease.id }), token: 'fetch-token', attempt: 1, maxAttempts: 3, signal: undefined };
  return { lease, ctx };
}

/** The manual clock moves on while the host's turns wait for it. */
async function ticking<T>(work: () => Promise<T>): Promise<T> {
  const timer = setInterval(() => clock.advance(50), 1);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}

/** A next delivery of `job` (token render-2) renders the page and hands it on, not "render lease lost", without fetching it again. */
async function nextDeliveryRenders(job: RenderJob): Promise<void> {
  const r = renderer();
  const result = await ticking(() => processRenderJob({ ...deps(), render: renderDeps(r) }, job, { token: 'render-2', aliveMs: 6000 }));
  expect(result).toMatchObject({ rendered: true, handedOff: expect.any(String) });
  expect(r.calls).toHaveLength(1);
  expect(counts.get('renderLeaseLost')).toBeUndefined();
  expect(fetches.filter((f) => f.url === PAGE)).toHaveLength(1);
}

/** The host's one URL claimed and fetched by a fetch stage without the render role, which handed it over: its render job. */
async function handedOver() {
  const { lease, ctx } = await claimed();
  const handOver = handOverDeps(async () => true);
  await processFetchJob({ ...deps(), renderHandOver: handOver }, ctx);
  return { lease, ctx, handOver, job: await onlyRenderJob(handOver.queue) };
}

async function onlyRenderJob(queue: RenderQueue) {
  const waiting = await queue.queue.getWaiting();
  expect(waiting).toHaveLength(1);
  return decodeRenderJob(renderJobDataSchema.parse(waiting[0]?.data));
}

/** A delivery of the job (tries left) that fails after taking the host over: the stored body unreadable a moment. */
async function failedTry(job: ReturnType<typeof decodeRenderJob>): Promise<void> {
  const d = deps();
  const unreachable = { ...d, store: { ...d.store, get: async () => Promise.reject(new Error('the content store is unreachable')) }, render: renderDeps(renderer()) };
  await expect(processRenderJob(unreachable, job, { token: 'render-1', aliveMs: 6000 })).rejects.toThrow(/unreachable/);
}

const otherTicket = (lease: Lease) => ({ partition: 0, host: HOST, leaseId: 'p0-other', token: 'other', band: lease.band, entry: { url: `${PAGE}other`, depth: 0, hops: 0, flags: 0 } });

const CDN_SCRIPT = 'http://cdn.example/lib.js';

/** A page that loads the CDN's script: a refusal is recorded as the renderer records one (blocked, with its reason). */
const cdnRenderer = () =>
  new FakeRenderer(async (url, options: RenderOptions) => {
    const outcome = await options.fetch(CDN_SCRIPT, { resourceType: 'script', method: 'GET', headers: {}, signal: new AbortController().signal }).then(
      () => ({ url: CDN_SCRIPT, resourceType: 'script', outcome: 'fetched' as const }),
      (error: unknown) => ({ url: CDN_SCRIPT, resourceType: 'script', outcome: 'blocked' as const, reason: (error as RequestRefused).reason }),
    );
    return { ok: true, url, finalUrl: url, status: 200, html: RENDERED, requests: [outcome], timings: { queuedMs: 0, openMs: 0, renderMs: 0, totalMs: 0 } };
  });

/** The page fetched by a fetch stage without the render role, then rendered by a render stage with `cdnRenderer`. */
async function renderWithCdn() {
  const { job } = await handedOver();
  return ticking(() => processRenderJob({ ...deps(), render: renderDeps(cdnRenderer()) }, job, { token: 'render-1', aliveMs: 6000 }));
}

describe('a fetch stage without the render role', () => {
  it('hands a page to render over with its host held and its body stored; the render stage renders it from the body, in the host\'s turns, then frees the host', async () => {
    const { lease, ctx } = await claimed();
    const handOver = handOverDeps(async () => true);
    const result = await processFetchJob({ ...deps(), renderHandOver: handOver }, ctx);
    expect(result).toMatchObject({ outcome: 'done', summary: { renderHandedOver: true } });
    expect(counts.get('renderHandedOver')).toBe(1);
    expect(fetches.map((f) => f.url)).toEqual([PAGE]);
    // Durable before the ack: the job is in Redis, naming the stored body and the fetch's token.
    const job = await onlyRenderJob(handOver.queue);
    expect(job.token).toBe('fetch-token');
    const page = decodeHandedPage(job.page);
    expect(page).toMatchObject({ job: { url: PAGE, leaseId: lease.id }, body: { key: `sha256:${SHELL.length}` } });
    // The host is still held: no other lease of it passes the gate, and the fetching worker's
    // death frees nothing (the lease is no longer among its holds).
    expect((await frontier.acquire(otherTicket(lease))).kind).toBe('busy');
    expect(await frontier.releaseHolder('worker@fetcher:1:a')).toBe(0);
    expect(await frontier.processDepth(0)).toBe(0);

    const r = renderer();
    const rendered = await ticking(() => processRenderJob({ ...deps(), render: renderDeps(r) }, job, { token: 'render-1', aliveMs: 6000 }));
    expect(rendered).toMatchObject({ rendered: true, reason: 'empty-app-root' });
    // The document came from the store, never fetched again; the script in the host's turn, a delay after the page's response.
    expect(r.calls[0]?.options.document?.body.toString()).toBe(SHELL);
    expect(fetches.map((f) => f.url)).toEqual([PAGE, `http://${HOST}/app.js`]);
    expect((fetches[1] as { at: number }).at).toBeGreaterThan((fetches[0] as { at: number }).at + 20 + DELAY);
    // Handed to the process stage with the rendered DOM; the host due a delay after the script's response.
    const entries = await t.redis.xrange(frontier.keysOf(0).process, '-', '+');
    expect(entries).toHaveLength(1);
    expect(entries[0]?.[1][1]).toContain('"rendered":true');
    const state = await frontier.hostState(HOST);
    expect(state.due).toBe((fetches[1] as { at: number }).at + 20 + DELAY);
    clock.set(state.due + 1);
    expect((await frontier.acquire(otherTicket(lease))).kind).toBe('ok');
  });

  it('a render stage borrows another host\'s gate for its script: fetched in that host\'s turn, which is then due its delay after', async () => {
    expect(await renderWithCdn()).toMatchObject({ rendered: true, reason: 'empty-app-root' });
    const cdn = fetches.find((f) => f.url === CDN_SCRIPT);
    expect(cdn).toBeDefined();
    expect(await frontier.hostState('cdn.example')).toMatchObject({ fetching: false, due: (cdn as { at: number }).at + 20 + DELAY, total: 0 });
    expect(counts.get('renderBorrowed')).toBe(1);
  });

  it('a render stage is refused another host\'s script at once while that host is busy, and says so in the page\'s reason', async () => {
    expect((await frontier.borrowHost('cdn.example', { holdMs: 60_000, withinMs: 0 })).kind).toBe('granted');
    expect(await renderWithCdn()).toMatchObject({ rendered: true, reason: 'empty-app-root; other hosts refused: cdn.example busy' });
    expect(fetches.map((f) => f.url)).not.toContain(CDN_SCRIPT);
    expect(counts.get('renderBorrowRefused')).toBe(1);
    expect(records).toEqual([]);
    const entries = await t.redis.xrange(frontier.keysOf(0).process, '-', '+');
    expect(entries[0]?.[1][1]).toContain('other hosts refused: cdn.example busy');
  });

  it('with no render stage alive, processes the page unrendered and releases the host as usual', async () => {
    const { ctx } = await claimed();
    const registry = new RenderWorkers(t.redis, prefix);
    const handOver = handOverDeps(async () => (await registry.alive(clock.now())) > 0);
    await processFetchJob({ ...deps(), renderHandOver: handOver }, ctx);
    expect(await handOver.queue.queue.getWaitingCount()).toBe(0);
    expect(counts.get('renderNoWorker')).toBe(1);
    const entries = await t.redis.xrange(frontier.keysOf(0).process, '-', '+');
    expect(entries).toHaveLength(1);
    expect(entries[0]?.[1][1]).toContain('"reason":"empty-app-root; no render worker"');
    expect((await frontier.hostState(HOST)).due).toBe((fetches[0] as { at: number }).at + 20 + DELAY);
  });

  it('the registry counts a render stage alive until its heartbeat lapses', async () => {
    const registry = new RenderWorkers(t.redis, prefix);
    expect(await registry.alive(clock.now())).toBe(0);
    await registry.heartbeat('render@a', clock.now() + 3000, clock.now());
    expect(await registry.alive(clock.now())).toBe(1);
    expect(await registry.alive(clock.now() + 3000)).toBe(0);
    await registry.heartbeat('render@a', clock.now() + 3000, clock.now());
    await registry.leave('render@a');
    expect(await registry.alive(clock.now())).toBe(0);
  });

  it('a render stage whose lease was lost does not render: the page is recorded unrendered from the stored body, never fetched again', async () => {
    const { job } = await handedOver();
    // The render job waited past the lease: its URL went back to the frontier.
    clock.advance(60_001);
    expect((await frontier.claim(0, 10)).expired).toBe(1);
    const r = renderer();
    const result = await processRenderJob({ ...deps(), render: renderDeps(r) }, job, { token: 'render-1', aliveMs: 6000 });
    expect(result).toMatchObject({ rendered: false, reason: 'empty-app-root; render lease lost (stale)', handedOff: null });
    expect(r.calls).toHaveLength(0);
    expect(fetches.map((f) => f.url)).toEqual([PAGE]);
    expect(counts.get('renderLeaseLost')).toBe(1);
    expect(records.map((rec) => [rec.url, rec.render?.reason])).toEqual([[PAGE, 'empty-app-root; render lease lost (stale)']]);
  });

  it('a render stage whose lease lost its host (another live lease holds it) hands the page on unrendered with its lease: not left to lapse', async () => {
    const { lease, job } = await handedOver();
    // An earlier delivery marked the lease fetched by itself, and the host is another live lease's now.
    const keys = frontier.keysOf(lease.partition);
    await t.redis.zadd(keys.leases, clock.now() + 60_000, 'another-lease');
    await t.redis.hset(`${keys.base}h:${HOST}`, 'claim', 'another-lease');
    await t.redis.hset(keys.fetched, lease.id, `render-1 ${clock.now() + 6000}`);
    const r = renderer();
    const result = await processRenderJob({ ...deps(), render: renderDeps(r) }, job, { token: 'render-2', aliveMs: 6000 });
    expect(result).toMatchObject({ rendered: false, reason: 'empty-app-root; render lease lost (lost)', handedOff: expect.any(String) });
    expect(r.calls).toHaveLength(0);
    // Handed off with its lease (acknowledged once the process stage records it), not recorded here apart from it.
    expect(records).toEqual([]);
    expect((await t.redis.xlen(keys.process)) + (await t.redis.xlen(keys.urgent))).toBe(1);
    expect(fetches.filter((f) => f.url === PAGE)).toHaveLength(1);
  });

  it('a delivery that gave the host back after rendering and died before handing the page on: the next takes the freed host again and renders', async () => {
    const { lease, job } = await handedOver();
    const keys = frontier.keysOf(lease.partition);
    // The dead delivery released the host (nothing else of it queued: nobody claimed it) and
    // marked the lease fetched by itself, then died before its hand-off.
    await t.redis.hdel(`${keys.base}h:${HOST}`, 'claim', 'tok', 'tokUntil');
    await t.redis.hset(keys.fetched, lease.id, `render-1 ${clock.now() + 6000}`);
    await nextDeliveryRenders(job);
    expect((await t.redis.xlen(keys.process)) + (await t.redis.xlen(keys.urgent))).toBe(1);
  });

  it('a delivery that fails keeps the host for its lease, due the page\'s delay: no other lease takes it, and the next delivery renders', async () => {
    const { lease, job } = await handedOver();
    // The try fails after it took the host over.
    await failedTry(job);
    // Nothing handed on; the host still this lease's, its token free, due the page's delay.
    const keys = frontier.keysOf(lease.partition);
    expect((await t.redis.xlen(keys.process)) + (await t.redis.xlen(keys.urgent))).toBe(0);
    const host = await t.redis.hgetall(`${keys.base}h:${HOST}`);
    expect(host.claim).toBe(lease.id);
    expect(host.tok).toBeUndefined();
    expect(Number(host.due)).toBeGreaterThanOrEqual(job.hostDueAt);
    expect((await frontier.acquire(otherTicket(lease))).kind).toBe('busy');
    // The next delivery takes the host over at once and renders (not "render lease lost").
    await nextDeliveryRenders(job);
    // Released with the render: the host's next URL goes on.
    expect((await t.redis.hgetall(`${keys.base}h:${HOST}`)).claim).toBeUndefined();
  });

  it('a fetch job of the lease redelivered while its page waits for a render stage does not fetch the page again', async () => {
    const { ctx, lease, job, handOver } = await handedOver();
    // A render delivery took the host over and died; its token has lapsed, and the job waits for its next try.
    expect(await frontier.takeHost({ partition: 0, host: HOST, leaseId: lease.id, token: 'render-dead' }, job.token, 6000)).toMatchObject({ kind: 'ok' });
    clock.advance(6001);
    // The fetch job's lock had lapsed too: BullMQ runs it again. It waits; it does not fetch.
    const redo = await processFetchJob({ ...deps(), renderHandOver: handOver }, { ...ctx, token: 'fetch-token-2', redelivered: true });
    expect(redo).toMatchObject({ outcome: 'defer' });
    expect(fetches.filter((f) => f.url === PAGE)).toHaveLength(1);
    expect(await handOver.queue.queue.getWaitingCount()).toBe(1);
    // The render job's next delivery renders the page, and the redelivered fetch job then has nothing left to do.
    const result = await ticking(() => processRenderJob({ ...deps(), render: renderDeps(renderer()) }, job, { token: 'render-2', aliveMs: 6000 }));
    expect(result).toMatchObject({ rendered: true, handedOff: expect.any(String) });
    expect(await processFetchJob({ ...deps(), renderHandOver: handOver }, { ...ctx, token: 'fetch-token-3', redelivered: true })).toMatchObject({ outcome: 'stale' });
    expect(fetches.filter((f) => f.url === PAGE)).toHaveLength(1);
  });

  it('a delivery whose job BullMQ took mid-render gives the host back for the lease, due after its requests: the next delivery takes it at once and starts no sooner', async () => {
    const { lease, job } = await handedOver();
    const jobTaken = new AbortController();
    // The browser fetched the page's script, then the delivery's lock lapsed: BullMQ aborted it.
    const aborted = new FakeRenderer(async (url, options: RenderOptions) => {
      await options.fetch(`http://${HOST}/app.js`, { resourceType: 'script', method: 'GET', headers: {}, signal: new AbortController().signal });
      jobTaken.abort();
      return { ok: false, url, finalUrl: url, status: null, error: renderError(RenderErrorCode.Aborted, 'the render was aborted'), requests: [], timings: { queuedMs: 0, openMs: 0, renderMs: 0, totalMs: 0 } };
    });
    await expect(ticking(() => processRenderJob({ ...deps(), render: renderDeps(aborted) }, job, { token: 'render-1', aliveMs: 6000, signal: jobTaken.signal, last: true }))).rejects.toThrow(/aborted/);
    const scriptAt = (fetches.find((f) => f.url.endsWith('/app.js')) as { at: number }).at;
    // Nothing handed on, nothing recorded; the host still this lease's (no other lease passes the gate).
    const keys = frontier.keysOf(lease.partition);
    expect((await t.redis.xlen(keys.process)) + (await t.redis.xlen(keys.urgent))).toBe(0);
    expect(records).toEqual([]);
    expect((await frontier.acquire(otherTicket(lease))).kind).toBe('busy');
    // The next delivery takes the host over at once and renders, its first request a delay after the last one.
    const r = renderer();
    const result = await ticking(() => processRenderJob({ ...deps(), render: renderDeps(r) }, job, { token: 'render-2', aliveMs: 6000 }));
    expect(result).toMatchObject({ rendered: true, handedOff: expect.any(String) });
    const scripts = fetches.filter((f) => f.url.endsWith('/app.js'));
    expect(scripts).toHaveLength(2);
    expect((scripts[1] as { at: number }).at - scriptAt).toBeGreaterThanOrEqual(DELAY);
    expect(fetches.filter((f) => f.url === PAGE)).toHaveLength(1);
  });

  it('a render job redone after its render stage died takes the host over once the dead one\'s token lapses, and renders from the stored body; a second live delivery never renders alongside', async () => {
    const { lease, job } = await handedOver();
    // The first delivery took the host over and died mid-render (it stops renewing its token).
    const dead = { partition: 0, host: HOST, leaseId: lease.id, token: 'render-dead' };
    expect(await frontier.takeHost(dead, job.token, 6000)).toMatchObject({ kind: 'ok' });
    const r = renderer();
    // While its token lives, another delivery of the job does not render: BullMQ tries it again later.
    await expect(processRenderJob({ ...deps(), render: renderDeps(r) }, job, { token: 'render-2', aliveMs: 6000 })).rejects.toBeInstanceOf(RenderHostBusy);
    expect(r.calls).toHaveLength(0);
    // Nor does any other lease of the host fetch meanwhile.
    clock.advance(6001);
    expect((await frontier.acquire(otherTicket(lease))).kind).toBe('busy');
    const result = await ticking(() => processRenderJob({ ...deps(), render: renderDeps(r) }, job, { token: 'render-3', aliveMs: 6000 }));
    expect(result).toMatchObject({ rendered: true });
    expect(fetches.filter((f) => f.url === PAGE)).toHaveLength(1);
    // A delivery that turns up after the page was handed off has nothing left to do.
    const late = await processRenderJob({ ...deps(), render: renderDeps(r) }, job, { token: 'render-4', aliveMs: 6000 });
    expect(late).toMatchObject({ rendered: false, handedOff: null });
    expect(r.calls).toHaveLength(1);
    // Once recorded and acknowledged, a delivery still turning up neither renders nor records it again.
    const [entry] = await t.redis.xrange(frontier.keysOf(0).process, '-', '+');
    await frontier.ack(0, [lease.id], [entry?.[0] as string]);
    urlState = 'done';
    const later = await processRenderJob({ ...deps(), render: renderDeps(r) }, job, { token: 'render-5', aliveMs: 6000 });
    expect(later).toMatchObject({ rendered: false, reason: 'recorded by an earlier delivery', handedOff: null });
    expect(records).toEqual([]);
    expect(r.calls).toHaveLength(1);
  });
});

describe('a render job on its last try', () => {
  it('hands the page to the process stage unrendered when the try fails, rather than leave its lease to lapse and the page to be fetched again', async () => {
    const { job } = await handedOver();
    const r = renderer();
    // A try that fails (no crawl policy readable) with tries left: thrown, for BullMQ to try again.
    const unready = { ...deps(), render: renderDeps(r), policy: { get: async () => null, refresh: async () => null } };
    await expect(processRenderJob(unready, job, { token: 'render-1', aliveMs: 6000 })).rejects.toThrow(/no crawl policy/);
    expect(await t.redis.xlen(frontier.keysOf(0).process)).toBe(0);
    // The same failure on the last try: the page goes on as fetched, from its stored body.
    const result = await processRenderJob(unready, job, { token: 'render-2', aliveMs: 6000, last: true });
    expect(result).toMatchObject({ rendered: false, handedOff: expect.any(String) });
    expect(result.reason).toContain('render failed on its last try: no crawl policy');
    expect(r.calls).toHaveLength(0);
    expect(counts.get('renderFailed')).toBe(1);
    const streams = frontier.keysOf(0);
    expect((await t.redis.xlen(streams.process)) + (await t.redis.xlen(streams.urgent))).toBe(1);
    expect(fetches.filter((f) => f.url === PAGE)).toHaveLength(1);
    // The host the lease still held is released (due the page's delay): the host's next URL goes on.
    const host = await t.redis.hgetall(`${streams.base}h:${HOST}`);
    expect(host.claim).toBeUndefined();
    expect(Number(host.due)).toBe(job.hostDueAt);
    expect(await t.redis.zscore(streams.ready, HOST)).not.toBeNull();
  });

  it('frees the host an earlier failed try kept for the lease, then hands the page on', async () => {
    const { lease, job } = await handedOver();
    await failedTry(job);
    const keys = frontier.keysOf(lease.partition);
    expect((await t.redis.hgetall(`${keys.base}h:${HOST}`)).claim).toBe(lease.id);
    // The last try fails before it takes the host (no policy readable): the host is freed, the page handed on.
    const unready = { ...deps(), render: renderDeps(renderer()), policy: { get: async () => null, refresh: async () => null } };
    const result = await processRenderJob(unready, job, { token: 'render-2', aliveMs: 6000, last: true });
    expect(result).toMatchObject({ rendered: false, handedOff: expect.any(String) });
    expect((await t.redis.xlen(keys.process)) + (await t.redis.xlen(keys.urgent))).toBe(1);
    const host = await t.redis.hgetall(`${keys.base}h:${HOST}`);
    expect(host.claim).toBeUndefined();
    expect(await t.redis.zscore(keys.ready, HOST)).not.toBeNull();
    expect((await frontier.acquire(otherTicket(lease))).kind).not.toBe('busy');
  });

  it('still waits for another delivery that holds the host, without counting a failed try', async () => {
    const { lease, job } = await handedOver();
    expect(await frontier.takeHost({ partition: 0, host: HOST, leaseId: lease.id, token: 'render-alive' }, job.token, 6000)).toMatchObject({ kind: 'ok' });
    const busy = await processRenderJob({ ...deps(), render: renderDeps(renderer()) }, job, { token: 'render-2', aliveMs: 6000, last: true }).catch((error: unknown) => error);
    expect(busy).toBeInstanceOf(RenderHostBusy);
    expect(busy).toBeInstanceOf(RenderLater);
    expect((busy as RenderHostBusy).retryAt).toBeGreaterThan(clock.now());
  });
});

describe('a page handed to a render stage, hosts grouped by server address (TRAWL_POLITENESS_KEY=ip)', () => {
  const IP = { TRAWL_POLITENESS_KEY: 'ip' };
  const ADDRESS = '10.9.9.9';
  const settings: AddressSettings = { key: 'ip', ipMaxInFlight: 6, ipMinIntervalMs: 0, minDelayMs: DELAY };
  /** The real address gate (fetch hold 30 s, shorter than the 60 s lease), every host on one address. */
  const addressGroups = () => new AddressGroups({ gate: new AddressGate(t.redis, { prefix, clock, holdMs: 30_000 }), serverAddress: async () => ADDRESS, onError: () => undefined });
  /** Another host on the same address asking for its turn. */
  const neighbour = (groups: AddressGroups, holder = 'p0-neighbour') => groups.enter({ host: 'neighbour.example', hostname: 'neighbour.example', holder }, settings);

  it('keeps the address group\'s slot from the fetch through the render, past the fetch\'s hold of it, and frees it with the host, a delay after the browser\'s last response', async () => {
    const { ctx } = await claimed();
    const addresses = addressGroups();
    const handOver = handOverDeps(async () => true);
    await processFetchJob({ ...deps(IP), addresses, renderHandOver: handOver }, ctx);
    const job = await onlyRenderJob(handOver.queue);
    expect(job.addressSlots).toEqual([{ group: `ip:${ADDRESS}`, strict: true }]);
    // While the page waits in the render queue, even past the 30 s the fetch took the slot for, no other host of the address goes.
    expect((await neighbour(addresses)).kind).toBe('wait');
    clock.advance(30_001);
    expect((await neighbour(addresses)).kind).toBe('wait');
    // Nor while the browser makes its requests.
    const during: string[] = [];
    const r = new FakeRenderer(async (_url, options: RenderOptions) => {
      await options.fetch(`http://${HOST}/app.js`, { resourceType: 'script', method: 'GET', headers: {}, signal: new AbortController().signal });
      during.push((await neighbour(addresses)).kind);
      return RENDERED;
    });
    const rendered = await ticking(() => processRenderJob({ ...deps(IP), addresses, render: renderDeps(r) }, job, { token: 'render-1', aliveMs: 6000 }));
    expect(rendered).toMatchObject({ rendered: true });
    expect(during).toEqual(['wait']);
    // Released with the host: the next host of the address goes once the host's delay after the script's response has passed.
    const due = (await frontier.hostState(HOST)).due;
    expect(due).toBe((fetches[1] as { at: number }).at + 20 + DELAY);
    clock.set(due - 1);
    const next = await neighbour(addresses, 'p0-next');
    // (Its start time is further off when hosts of the address already wait in line: their turns come first.)
    expect(next).toMatchObject({ kind: 'wait', at: expect.any(Number) });
    expect((next as { at: number }).at).toBeGreaterThanOrEqual(due);
    clock.set((next as { at: number }).at);
    expect((await neighbour(addresses, 'p0-next')).kind).toBe('go');
  });

  it('a render that fails keeps the slot with the host for the job\'s next try; the last try frees both, a delay from then', async () => {
    const { ctx } = await claimed();
    const addresses = addressGroups();
    const handOver = handOverDeps(async () => true);
    await processFetchJob({ ...deps(IP), addresses, renderHandOver: handOver }, ctx);
    const job = await onlyRenderJob(handOver.queue);
    const failing = new FakeRenderer(async () => {
      throw new Error('the browser crashed');
    });
    await expect(processRenderJob({ ...deps(IP), addresses, render: { ...renderDeps(failing) } }, job, { token: 'render-1', aliveMs: 6000 })).rejects.toThrow(/crashed/);
    expect(failing.calls).toHaveLength(1);
    // The retry's browser requests are still to come: no other host of the address goes meanwhile.
    clock.advance(DELAY + 2_001);
    expect((await neighbour(addresses)).kind).toBe('wait');
    // The last try fails too: the page goes on unrendered, and the host and the slot are freed, due the page's delay.
    const result = await processRenderJob({ ...deps(IP), addresses, render: { ...renderDeps(failing) } }, job, { token: 'render-2', aliveMs: 6000, last: true });
    expect(result).toMatchObject({ rendered: false, handedOff: expect.any(String) });
    expect(result.reason).toContain('render failed on its last try: the browser crashed');
    clock.advance(DELAY + 1);
    expect((await neighbour(addresses)).kind).toBe('go');
  });

  it('with no render stage alive, the fetch stage frees the slot as for any page, once the delay after its response has passed', async () => {
    const { ctx } = await claimed();
    const addresses = addressGroups();
    await processFetchJob({ ...deps(IP), addresses, renderHandOver: handOverDeps(async () => false) }, ctx);
    expect(counts.get('renderNoWorker')).toBe(1);
    expect((await neighbour(addresses)).kind).toBe('wait');
    clock.set((fetches[0] as { at: number }).at + 20 + DELAY + 2_001);
    expect((await neighbour(addresses)).kind).toBe('go');
  });
});

describe('the learner of a fetch stage without the render role', () => {
  it('hands over one sample of a host at a time, and otherwise only what the classifier says (never every page with a script)', async () => {
    const learner = new RenderLearner({ ...DEFAULT_LEARNER_SETTINGS, sampleSize: 2 }, clock);
    const handOver = { ...handOverDeps(async () => true), learner };
    // Pages with a script of their own and plenty of text and links: the classifier alone would not render them.
    const page = `<html><body>${'<p>Words enough to read as a page of its own. </p>'.repeat(20)}${Array.from({ length: 10 }, (_, i) => `<a href="/p/${i}">p${i}</a>`).join('')}<script src="/menu.js"></script></body></html>`;
    const fetched = { response: { ...response(PAGE, page) }, status: 'ok' as const, release: { dueAt: clock.now() } };
    const attempt = { id: 'x', job: decodeFetchJob({ u: PAGE, h: HOST, p: 0, d: 0, x: 0, f: 0, b: 0, l: 'p0-9' }), token: 't', attempt: 1, maxAttempts: 1, signal: undefined, hash: Buffer.alloc(0) };
    const verdicts = [];
    for (let i = 0; i < 4; i++) verdicts.push(await handOverVerdictOf({ counters: deps().counters, renderHandOver: handOver }, attempt, fetched));
    // The first page is a sample; while its comparison is out, the next pages are not.
    expect(verdicts.map((v) => v.handOver)).toEqual([true, false, false, false]);
  });
});

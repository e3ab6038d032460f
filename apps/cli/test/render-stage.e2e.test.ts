import { Database } from '@trawl/db';
import { renderWorkersKey } from '@trawl/queue';
import { createRedis } from '@trawl/redis';
import { analyzeLog, TestWeb } from '@trawl/testweb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASE_URL, describeOutstanding, dropNamespace, maxInFlight, outstandingUrls, PLAIN_HOST, type Proc, REDIS_URL, scriptedWebPages, startScriptedWeb, trawl, uniqueNamespace, waitFor } from '../src/testing/index.js';

/**
 * Rendering in a stage of its own (TRAWL_WORKER_ROLES=render), judged from the synthetic web's
 * log: an HTTP-only worker (fetch,process, TRAWL_RENDER=auto) hands the pages it would render to
 * two render-only workers, one of them SIGKILLed mid-crawl, on an SPA, a hybrid and a plain site.
 * Every page is found and fetched once, every request (the browser's included) is one of its
 * host's polite turns, and the HTTP-only worker never starts a browser.
 */
const PAGES = 20;
const CRAWL_DELAY_S = 0.3;
const DELAY_MS = CRAWL_DELAY_S * 1000;
const PARTITIONS = 2;
const PLAIN = PLAIN_HOST;
const BROWSER_STARTED = 'starting the headless browser';

const redis = createRedis(REDIS_URL);
const namespace = uniqueNamespace('renderstage');
const alive = (p: Proc) => p.child.exitCode === null && p.child.signalCode === null;
let web: TestWeb;

beforeAll(async () => {
  web = await startScriptedWeb({ pages: PAGES, crawlDelayS: CRAWL_DELAY_S, seed: 12 });
});

afterAll(async () => {
  await web?.stop();
  await dropNamespace(namespace);
  redis.disconnect();
});

/** URLs still to do (leased, those waiting for a render or the process stage included, and queued): 0 when the crawl is done. */
const outstanding = (of = namespace) => outstandingUrls(redis, of, PARTITIONS);

const output = (p: Proc) => p.stdout() + p.stderr();

describe('a render stage of its own', () => {
  it('renders for an HTTP-only worker that never starts a browser: complete, once, polite, though a render worker is SIGKILLed', async () => {
    const env = {
      TRAWL_NAMESPACE: namespace,
      TRAWL_ALLOW_NETWORKS: '127.0.0.0/8',
      TRAWL_PARTITIONS: String(PARTITIONS),
      TRAWL_MIN_DELAY_MS: '100',
      TRAWL_SCOPE: 'any',
      TRAWL_CONTENT_DIR: `.trawl/test-content/${namespace}`,
      TRAWL_RENDER: 'auto',
      TRAWL_LOG_LEVEL: 'info',
    };
    // Each process names itself in its User-Agent, so the log says who made each request.
    const renderers = ['a', 'b'].map((name) => trawl(['worker'], { ...env, TRAWL_WORKER_ROLES: 'render', TRAWL_USER_AGENT: `trawl-test (renderer ${name})` }));
    const all: Proc[] = [...renderers];
    try {
      // The render stages are alive before the first page is fetched (else it is processed unrendered).
      await waitFor(async () => (await redis.zcount(renderWorkersKey(namespace), `(${Date.now()}`, '+inf')) === 2, 60_000, 'two render stages');
      const httpOnly = trawl(['worker'], { ...env, TRAWL_WORKER_ROLES: 'fetch,process', TRAWL_USER_AGENT: 'trawl-test (http only)' });
      const scheduler = trawl(['scheduler'], env);
      all.push(httpOnly, scheduler);
      const roots = web.rootUrls();
      const origins = roots.map((root) => new URL(root).origin);
      const seeded = trawl(['seed', ...roots], env);
      expect((await seeded.exited).code, seeded.stderr()).toBe(0);
      const expected = scriptedWebPages(web, PAGES);
      expect(expected.size).toBe(3 * PAGES);

      // Mid-crawl, once a render stage has a browser: it dies with its renders in hand.
      await waitFor(() => renderers.some((r) => output(r).includes(BROWSER_STARTED)) && web.log.filter((e) => e.resource === 'page').length >= expected.size / 3, 120_000, 'a third of the crawl');
      const victim = renderers.find((r) => output(r).includes(BROWSER_STARTED)) as Proc;
      victim.child.kill('SIGKILL');
      const killedAt = Date.now();
      try {
        await waitFor(async () => (await outstanding()) === 0, 240_000, 'the crawl to finish');
      } catch (error) {
        console.log(`[render-stage] unfinished, ${Math.round((Date.now() - killedAt) / 1000)} s after the kill:\n${await describeOutstanding(redis, namespace, PARTITIONS)}`);
        throw error;
      }
      await web.idle();

      const report = analyzeLog(web.log, { minIntervalMs: DELAY_MS, expected });
      for (const v of report.intervals.violations) {
        const near = web.log.filter((e) => e.host === v.host && Math.abs(e.start - v.start) < 10_000).map((e) => `${Math.round(e.start - killedAt)} ${e.path} ${e.userAgent}`);
        console.log(`[render-stage] interval violation ${JSON.stringify(v)}; kill at 0; nearby:\n${near.join('\n')}`);
      }
      expect(report.coverage?.missing).toEqual([]);
      expect(report.coverage?.unexpected).toEqual([]);
      // Each page document once: the killed stage's pages were rendered again from their stored bodies.
      expect(report.duplicates.pages).toEqual([]);
      expect(report.concurrency.violations).toEqual([]);
      expect(report.intervals.violations).toEqual([]);
      // The browser's requests went out (through the render stages, under the hosts' turns).
      expect(web.log.filter((e) => e.hostIndex === 1 && e.note === 'data').length).toBeGreaterThanOrEqual(PAGES);

      for (const p of all.filter((q) => q !== victim)) p.child.kill('SIGTERM');
      for (const p of all.filter((q) => q !== victim)) expect((await p.exited).code, p.stderr()).toBe(0);
      // The HTTP-only worker never started a browser; the surviving render stage did.
      expect(output(httpOnly)).not.toContain(BROWSER_STARTED);
      expect(output(httpOnly)).toContain('worker started');
      expect(output(renderers.find((r) => r !== victim) as Proc)).toContain(BROWSER_STARTED);

      const db = new Database({ url: DATABASE_URL, schema: namespace });
      try {
        const rows = (await db.pool.query<{ url: string; rendered: boolean; render_reason: string | null }>(`SELECT url, rendered, render_reason FROM "${namespace}".crawled_pages WHERE http_status = 200`)).rows;
        expect(rows).toHaveLength(3 * PAGES);
        const hostOf = (url: string) => origins.indexOf(new URL(url).origin);
        expect(rows.filter((r) => hostOf(r.url) === PLAIN && r.rendered)).toEqual([]);
        // Every SPA page rendered (its links exist only in the rendered DOM), none for want of a render worker.
        expect(rows.filter((r) => hostOf(r.url) === 1 && !r.rendered)).toEqual([]);
        expect(rows.filter((r) => (r.render_reason ?? '').includes('no render worker'))).toEqual([]);
      } finally {
        await db.close();
      }
    } catch (error) {
      // What went wrong, in the processes' own words: their warnings and errors.
      for (const p of all) {
        const warnings = output(p).split('\n').filter((line) => /"level":"(warn|error|fatal)"/.test(line) && !line.includes('metrics listener'));
        console.log(`[render-stage] ${p.child.pid}: ${warnings.length} warnings and errors:\n${warnings.join('\n').slice(-8000)}`);
      }
      throw error;
    } finally {
      for (const p of all) if (alive(p)) p.child.kill('SIGKILL');
      await Promise.all(all.map((p) => p.exited));
    }
  }, 360_000);
});

/**
 * The same under TRAWL_POLITENESS_KEY=ip: a single-page app and another site on ONE server
 * address (two ports). The address's turn is kept from the app page's fetch to the browser's last
 * request, so the server never sees the other site's requests overlap the render's.
 */
describe('a page rendered apart, hosts grouped by server address', () => {
  const ipNamespace = uniqueNamespace('renderip');
  /** The scripted web's SPA (host 1) is on the address after host 0's, which the neighbour shares. */
  const SPA = 1;
  const SPA_PAGES = 8;
  const NEIGHBOUR_PAGES = 40;
  let scripted: TestWeb;
  let neighbour: TestWeb;

  beforeAll(async () => {
    scripted = await startScriptedWeb({ pages: SPA_PAGES, crawlDelayS: 0.2, seed: 31, baseAddress: '127.81.0.1' });
    const spaAddress = new URL(scripted.origins[SPA] as string).hostname;
    // Slow and large enough to be crawled all through the app's renders, its responses long beside
    // the app's few milliseconds: a turn not kept through a render shows as an overlap.
    neighbour = await TestWeb.start({ hosts: 1, pagesPerHost: NEIGHBOUR_PAGES, linksPerPage: 3, crossHostLinks: 0, latencyMs: { min: 150, max: 250 }, seed: 32, baseAddress: spaAddress, noisyLinks: false });
  }, 60_000);

  afterAll(async () => {
    await scripted?.stop();
    await neighbour?.stop();
    await dropNamespace(ipNamespace);
  });

  it('keeps the address\'s turn through the render: the other site on the address never overlaps the browser\'s requests', async () => {
    const env = {
      TRAWL_NAMESPACE: ipNamespace,
      TRAWL_ALLOW_NETWORKS: '127.0.0.0/8',
      TRAWL_PARTITIONS: String(PARTITIONS),
      TRAWL_POLITENESS_KEY: 'ip',
      TRAWL_MIN_DELAY_MS: '100',
      TRAWL_SCOPE: 'any',
      TRAWL_CONTENT_DIR: `.trawl/test-content/${ipNamespace}`,
      TRAWL_RENDER: 'auto',
    };
    const renderer = trawl(['worker'], { ...env, TRAWL_WORKER_ROLES: 'render' });
    const all: Proc[] = [renderer];
    try {
      await waitFor(async () => (await redis.zcount(renderWorkersKey(ipNamespace), `(${Date.now()}`, '+inf')) === 1, 60_000, 'a render stage');
      all.push(trawl(['worker'], { ...env, TRAWL_WORKER_ROLES: 'fetch,process' }), trawl(['scheduler'], env));
      const seeded = trawl(['seed', scripted.rootUrls()[SPA] as string, ...neighbour.rootUrls()], env);
      expect((await seeded.exited).code, seeded.stderr()).toBe(0);
      await waitFor(async () => (await outstanding(ipNamespace)) === 0, 240_000, 'the crawl to finish');
      await Promise.all([scripted.idle(), neighbour.idle()]);

      const spa = scripted.log.filter((entry) => entry.hostIndex === SPA);
      // The app was rendered apart: the browser's data requests went out, one per page at least…
      expect(spa.filter((entry) => entry.note === 'data').length).toBeGreaterThanOrEqual(SPA_PAGES);
      expect(neighbour.log.filter((entry) => entry.resource === 'page').length).toBe(NEIGHBOUR_PAGES);
      // …and the one server saw one request at a time, the render's included.
      const address = [...spa, ...neighbour.log].sort((a, b) => (a.startHr ?? a.start) - (b.startHr ?? b.start));
      expect(maxInFlight(address)).toBe(1);
      for (const p of all) p.child.kill('SIGTERM');
      for (const p of all) expect((await p.exited).code, p.stderr()).toBe(0);
    } finally {
      for (const p of all) if (alive(p)) p.child.kill('SIGKILL');
      await Promise.all(all.map((p) => p.exited));
    }
  }, 360_000);
});

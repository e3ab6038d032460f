import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { TestWeb } from '@trawl/testweb';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropNamespace, type Proc, REPO, trawl, uniqueNamespace, waitFor } from '../src/testing/index.js';
import { type Browser, dashboardUrl, launchBrowser } from './browser.js';

// The operator's surface in a real browser (Debian's chromium, driven by playwright-core):
// sign in, add seeds through bull-board's form, watch a synthetic-web crawl on the overview
// until it is done, retry a dead-lettered job from bull-board and see it fetched — judged from
// the synthetic web's request log. Scheduler, worker and dashboard are `trawl` child processes.
// What the callbacks run in the page see (this file is compiled without the DOM library).
declare const document: { getElementById(id: string): { textContent: string | null; children: { length: number } } | null };
const SHOTS = join(REPO, '.artifacts', 'screenshots');
const TOKEN = `browser-${randomUUID()}`;
const namespace = uniqueNamespace('dashweb');
const FLAKY = 3; // the extra host: 500 for every page until flipped

let web: TestWeb;
let flipped = false;
const procs: Proc[] = [];
let dashboard: Proc;
let base = '';
let context: BrowserContext;
let page: Page;
let browser: Browser | undefined;

const env = () => ({
  TRAWL_NAMESPACE: namespace,
  TRAWL_API_TOKENS: TOKEN,
  TRAWL_ALLOW_NETWORKS: '127.0.0.0/8',
  TRAWL_SCOPE: 'any',
  TRAWL_MIN_DELAY_MS: '50',
  TRAWL_ATTEMPTS: '1',
  TRAWL_CONCURRENCY: '8',
  TRAWL_METRICS_PORT: '0',
  TRAWL_CONTENT_DIR: `.trawl/test-content/${namespace}`,
  TRAWL_LOG_LEVEL: 'warn',
});

const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const api = async (path: string): Promise<any> => (await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } })).json();

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  web = await TestWeb.start({
    hosts: 3,
    pagesPerHost: 5,
    linksPerPage: 2,
    crossHostLinks: 1,
    latencyMs: 2,
    seed: 11,
    extraHosts: 1,
    hostHandlers: {
      [FLAKY]: (req, res, ctx) => {
        if (req.url === '/robots.txt') return ctx.serve();
        if (!flipped) {
          res.writeHead(500, { 'content-type': 'text/plain' }).end('down for maintenance');
          return;
        }
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<!doctype html><html><body><p>back up</p></body></html>');
      },
    },
  });
  dashboard = trawl(['dashboard', '--port', '0'], env());
  procs.push(trawl(['scheduler'], env()), trawl(['worker'], env()), dashboard);
  base = await dashboardUrl(dashboard);
  browser = await launchBrowser();
  ({ context, page } = browser);
  // The pages load nothing from another site.
  page.on('request', (request) => {
    if (!request.url().startsWith(base) && !request.url().startsWith('data:')) throw new Error(`request to another site: ${request.url()}`);
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGTERM');
  await Promise.all(procs.map((p) => p.exited));
  await web?.stop();
  await dropNamespace(namespace);
  rmSync(join(REPO, '.trawl', 'test-content', namespace), { recursive: true, force: true });
}, 60_000);

describe('the dashboard in a browser', () => {
  it('signs in with a token', async () => {
    await page.goto(`${base}/`);
    expect(new URL(page.url()).pathname).toBe('/signin');
    await shot('signin');
    await page.fill('#token', 'not-the-token');
    await page.click('button[type=submit]');
    expect(await page.locator('.error').textContent()).toBe('That token is not valid.');
    await page.fill('#token', TOKEN);
    await page.click('button[type=submit]');
    await page.waitForURL(`${base}/`);
    await page.waitForFunction(() => document.getElementById('crawl-state')?.textContent !== '…');
    const cookies = await context.cookies(base);
    expect(cookies.find((c) => c.name === 'trawl_session')).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
  }, 60_000);

  it('adds a seeds job through bull-board\'s form, and the crawl runs to completion on the overview', async () => {
    await page.goto(`${base}/queues/queue/seeds`);
    await page.getByRole('heading', { name: 'seeds' }).waitFor();
    await shot('queues');
    // The queue's actions menu (⋮ beside the status tabs).
    await page.locator('button:has(svg.lucide-ellipsis-vertical)').click();
    await page.getByRole('menuitem', { name: 'Add job' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.locator('#job-name').fill('seeds');
    const editor = dialog.locator('.cm-content').first();
    await editor.click();
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Delete');
    const seeds = [...web.rootUrls(), `${web.origins[FLAKY]}/`];
    await page.keyboard.insertText(JSON.stringify({ urls: seeds, priority: 0.9, max_depth: 5 }));
    await shot('queues-add-job');
    await dialog.getByRole('button', { name: 'Add', exact: true }).click();
    await dialog.waitFor({ state: 'hidden' });

    // The scheduler takes the job; the overview shows the crawl until it is done.
    await page.goto(`${base}/`);
    await page.waitForFunction(() => Number((document.getElementById('done')?.textContent ?? '0').replace(/,/g, '')) > 0, null, { timeout: 60_000 });
    await shot('overview-running');
    await page.waitForFunction(() => document.getElementById('crawl-state')?.textContent === 'idle (done)', null, { timeout: 90_000, polling: 500 });
    await page.waitForTimeout(2500); // one more poll, so the charts have a few points
    await shot('overview-done');
    const pagesOnWeb = web.log.filter((e) => e.hostIndex !== FLAKY && e.status === 200 && e.path !== '/robots.txt').length;
    expect(pagesOnWeb).toBeGreaterThanOrEqual(3);
    expect(Number((await page.locator('#done').textContent())?.replace(/,/g, ''))).toBeGreaterThanOrEqual(pagesOnWeb);
    expect(await page.locator('#dead-count').textContent()).toBe('1');
    expect(await page.locator('#dead-reasons').textContent()).toContain('ERR_HTTP_5XX');
    const seedsJobs = await api('/queues/api/queues?activeQueue=seeds&status=completed&page=1&jobsPerPage=10');
    const seedsQueue = (seedsJobs.queues as { name: string; counts: Record<string, number> }[]).find((q) => q.name === 'seeds');
    expect(seedsQueue?.counts.completed).toBe(1);
  }, 180_000);

  it('retries the dead-lettered job from bull-board and the host is fetched again through the gate', async () => {
    const flakyBefore = web.log.filter((e) => e.hostIndex === FLAKY && e.path === '/');
    expect(flakyBefore.map((e) => e.status)).toEqual([500]);
    flipped = true;
    await page.goto(`${base}/queues/queue/fetch-p0?status=failed`);
    // The job card's own retry button (an icon; "Retry all" is the queue's).
    const retry = page.locator('button:has(svg.lucide-refresh-cw)').filter({ hasNotText: 'Retry all' }).first();
    await retry.waitFor();
    await shot('dead-letter');
    await retry.click();
    const confirm = page.getByRole('alertdialog').or(page.getByRole('dialog'));
    if (await confirm.isVisible().catch(() => false)) await confirm.getByRole('button', { name: /retry|confirm|yes|ok/i }).first().click();
    await waitFor(() => web.log.some((e) => e.hostIndex === FLAKY && e.path === '/' && e.status === 200), 30_000, 'the retried URL to be fetched');
    const flaky = web.log.filter((e) => e.hostIndex === FLAKY && e.path === '/');
    expect(flaky.map((e) => e.status)).toEqual([500, 200]);
    // Fetched as politely as any URL: never sooner than the delay after the first try.
    expect((flaky[1] as { start: number }).start - (flaky[0] as { end: number }).end).toBeGreaterThanOrEqual(50);
    const stats = await api('/v1/crawl/stats');
    await waitFor(async () => (await api('/v1/crawl/stats')).deadLetters.count === 0, 15_000, 'the dead-letter queue to empty');
    expect(stats.frontier.queued).toBe(0);
  }, 60_000);

  it('shows a host, pauses and resumes it from its page, and shows freshness and the API reference', async () => {
    const host = new URL(web.rootUrls()[0] as string).host;
    await page.goto(`${base}/hosts/${encodeURIComponent(host)}`);
    await page.waitForFunction(() => document.getElementById('delay')?.textContent !== '–', null, { timeout: 15_000 });
    await page.waitForFunction(() => (document.getElementById('fetch-rows')?.children.length ?? 0) > 0, null, { timeout: 15_000 });
    // 50 ms configured; 5 × a slow response's time may exceed it (the adaptive term).
    expect(['the configured delay', 'response time × factor']).toContain(await page.locator('#delay-reason').textContent());
    expect(await page.locator('#delay-terms').textContent()).toMatch(/^base 50 ms \(default\), back-off 0 ms, adaptive \d+ ms, max 60 s$/);
    expect(await page.locator('#robots-state').textContent()).toMatch(/^rules \(HTTP 200\)/);
    // The synthetic web's plain pages have no scripts: never rendered, and the page says why.
    expect(await page.locator('#fetch-rows tr td:nth-child(5)').first().textContent()).toBe('no: no-scripts');
    expect(await page.locator('#rendered-summary').textContent()).toMatch(/^Rendered in headless Chromium: 0 of the \d+ latest pages\.$/);
    // A rendering override from the host page, for every worker; `auto` clears it.
    expect(await page.locator('#host-render').textContent()).toBe('auto');
    await page.click('#render-never');
    await page.waitForFunction(() => document.getElementById('host-render')?.textContent === 'never', null, { timeout: 10_000 });
    expect((await api(`/v1/crawl/domains/${encodeURIComponent(host)}/status`)).render_override).toBe('never');
    await page.click('#render-auto');
    await page.waitForFunction(() => document.getElementById('host-render')?.textContent === 'auto', null, { timeout: 10_000 });
    await page.click('#pause-host');
    await page.waitForFunction(() => document.getElementById('host-state')?.textContent === 'paused', null, { timeout: 10_000 });
    expect((await api(`/v1/crawl/domains/${encodeURIComponent(host)}/status`)).paused).toBe(true);
    await shot('host');
    await page.click('#resume-host');
    await page.waitForFunction(() => document.getElementById('host-state')?.textContent !== 'paused', null, { timeout: 10_000 });
    expect((await api('/v1/crawl/paused')).hosts).toEqual([]);

    await page.goto(`${base}/freshness`);
    await page.waitForFunction(() => (document.getElementById('fresh-rows')?.children.length ?? 0) > 0, null, { timeout: 15_000 });
    await shot('freshness');
    await page.goto(`${base}/v1/docs`);
    await page.getByRole('heading', { name: /trawl REST API/ }).waitFor();
    await shot('api-docs');
  }, 60_000);

  it('stops cleanly on SIGTERM', async () => {
    dashboard.child.kill('SIGTERM');
    const { code } = await dashboard.exited;
    expect(code).toBe(0);
    expect(JSON.parse(dashboard.stdout().trim())).toEqual({ url: base });
    for (const p of procs) expect(p.stderr()).not.toContain(TOKEN);
  }, 30_000);
});

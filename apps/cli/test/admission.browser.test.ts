import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { systemClock } from '@trawl/core';
import { Frontier } from '@trawl/frontier';
import { createRedis } from '@trawl/redis';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropNamespace, type Proc, REDIS_URL, REPO, trawl, uniqueNamespace } from '../src/testing/index.js';
import { type Browser, dashboardUrl, launchBrowser } from './browser.js';

// Seed admission on the dashboard's overview, in a real browser (Debian's chromium, driven by
// playwright-core): the frontier fills to TRAWL_FRONTIER_MAX_QUEUED through the API, the overview
// says seeds are paused and shows the queued count against the threshold; once the frontier
// drains below 90 % of it, the overview says seeds are admitted again.
declare const document: { getElementById(id: string): { textContent: string | null } | null };
const SHOTS = join(REPO, '.artifacts', 'screenshots');
const TOKEN = `browser-${randomUUID()}`;
const namespace = uniqueNamespace('admitweb');
const redis = createRedis(REDIS_URL);
// The test drains the frontier by hand, as a dispatcher would (no scheduler runs).
const frontier = new Frontier(redis, { prefix: namespace, partitions: 1, bands: 4, leaseMs: 60_000, fetchHoldMs: 30_000, busyRetryMs: 500, maxUrlsPerHost: 0, clock: systemClock });

let dashboard: Proc;
let base = '';
let browser: Browser | undefined;
let page: Page;

const env = () => ({ TRAWL_NAMESPACE: namespace, TRAWL_API_TOKENS: TOKEN, TRAWL_FRONTIER_MAX_QUEUED: '4', TRAWL_METRICS_PORT: '0', TRAWL_LOG_LEVEL: 'warn' });
const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
const postSeeds = (urls: string[]) =>
  fetch(`${base}/v1/crawl/seeds`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ urls }) });
const text = (id: string) => page.locator(`#${id}`).textContent();

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  dashboard = trawl(['dashboard', '--port', '0'], env());
  base = await dashboardUrl(dashboard);
  browser = await launchBrowser();
  page = browser.page;
  await page.goto(`${base}/signin`);
  await page.fill('#token', TOKEN);
  await page.click('button[type=submit]');
  await page.waitForURL(`${base}/`);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  if (dashboard?.child.exitCode === null) dashboard.child.kill('SIGTERM');
  await dashboard?.exited;
  redis.disconnect();
  await dropNamespace(namespace);
}, 60_000);

describe('seed admission on the overview', () => {
  it('shows seeds admitted below the threshold', async () => {
    expect((await postSeeds(['http://a.example/', 'http://b.example/'])).status).toBe(202);
    await page.waitForFunction(() => document.getElementById('admission-threshold')?.textContent === '2 of 4 queued (resume below 3)', null, { timeout: 20_000, polling: 250 });
    expect(await text('admission-state')).toBe('admitting');
  }, 30_000);

  it('shows seed injection paused at the threshold, while the API refuses seeds', async () => {
    expect((await postSeeds(['http://c.example/', 'http://d.example/'])).status).toBe(202);
    const refused = await postSeeds(['http://e.example/']);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('60');
    await page.waitForFunction(() => document.getElementById('admission-state')?.textContent?.startsWith('paused since') === true, null, { timeout: 20_000, polling: 250 });
    expect(await text('admission-state')).toMatch(/^paused since \d{1,2}:\d{2}:\d{2}.* \(.+ ago\): seeds wait in the seeds queue until fewer than 3 are queued$/);
    expect(await text('admission-threshold')).toBe('4 of 4 queued (resume below 3)');
    expect(await text('queued')).toBe('4');
    await shot('overview-admission-paused');
  }, 30_000);

  it('shows seeds admitted again once the frontier is below 90 % of the threshold', async () => {
    // 3 is not below the resume mark: still paused.
    await frontier.claim(0, 1);
    await page.waitForFunction(() => document.getElementById('admission-threshold')?.textContent === '3 of 4 queued (resume below 3)', null, { timeout: 20_000, polling: 250 });
    expect(await text('admission-state')).toMatch(/^paused since/);
    await frontier.claim(0, 1);
    await page.waitForFunction(() => document.getElementById('admission-state')?.textContent === 'admitting', null, { timeout: 20_000, polling: 250 });
    expect(await text('admission-threshold')).toBe('2 of 4 queued (resume below 3)');
    await shot('overview-admission-resumed');
    expect((await postSeeds(['http://e.example/'])).status).toBe(202);
  }, 40_000);
});

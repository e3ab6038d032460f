import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { type Proc, waitFor } from '../src/testing/index.js';

/** Debian's chromium (never a downloaded browser build). */
const CHROMIUM = '/usr/bin/chromium';
const LISTENING = /trawl dashboard: (http:\/\/127\.0\.0\.1:\d+)\//;

/** The base URL of a `trawl dashboard --port 0` child process, once it listens. */
export async function dashboardUrl(dashboard: Proc): Promise<string> {
  await waitFor(() => LISTENING.test(dashboard.stderr()), 60_000, 'the dashboard to listen');
  return (LISTENING.exec(dashboard.stderr()) as RegExpExecArray)[1] as string;
}

export interface Browser {
  context: BrowserContext;
  page: Page;
  /** Closes the browser and removes its profile. */
  close(): Promise<void>;
}

/** A headless chromium on a fresh profile of its own, with one page open. */
export async function launchBrowser(): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), 'trawl-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const page = context.pages()[0] ?? (await context.newPage());
  return {
    context,
    page,
    async close() {
      await context.close().catch(() => undefined);
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

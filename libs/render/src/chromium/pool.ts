import { randomUUID } from 'node:crypto';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { findPidByArgument, processTreeMemoryBytes } from './proc.js';

/** Debian's chromium, driven by playwright-core (never a downloaded browser build). */
export const DEFAULT_CHROMIUM_PATH = '/usr/bin/chromium';

/**
 * The switches the dashboard's browser tests use, plus two that make a direct connection
 * impossible rather than merely unused: every request is answered by the interception layer
 * (`route.fulfill` from the caller's fetch), so anything that slipped past it (a preconnect, a
 * WebSocket, a feature we did not think of) meets a resolver that knows no host and a proxy that
 * is not there.
 */
export const CHROMIUM_ARGS: readonly string[] = Object.freeze([
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
  '--host-resolver-rules=MAP * ~NOTFOUND',
  '--proxy-server=http://127.0.0.1:9',
  '--proxy-bypass-list=<-loopback>',
]);

export interface BrowserPoolOptions {
  executablePath: string;
  /** Pages open at once across every browser; more renders wait their turn. */
  maxOpenPages: number;
  /** A browser is replaced after this many pages (leaks, fragmentation, a renderer gone bad). */
  pagesPerBrowser: number;
  /** …or once its process tree's memory (PSS where readable, else RSS) is over this (0: never look). */
  maxBrowserMemoryBytes: number;
  /** How often the memory is read, at most (a /proc walk costs a few ms). */
  memoryCheckEveryMs: number;
  /**
   * `host`: one context per host, kept while its browser lives, and its page kept between renders
   * (navigated to about:blank in between): a new page costs a renderer process, about three times
   * the CPU of a render in a kept one. `page`: a fresh context (cookies, storage) and page for
   * every render.
   */
  contextScope: 'page' | 'host';
  /** Host contexts kept per browser (least recently used idle ones closed first). */
  maxHostContexts: number;
  viewport: { width: number; height: number };
  userAgent?: string;
  extraArgs?: readonly string[];
}

export const DEFAULT_POOL_OPTIONS: Readonly<BrowserPoolOptions> = Object.freeze({
  executablePath: DEFAULT_CHROMIUM_PATH,
  maxOpenPages: 2,
  pagesPerBrowser: 200,
  maxBrowserMemoryBytes: 1024 * 1024 * 1024,
  memoryCheckEveryMs: 2000,
  contextScope: 'host',
  maxHostContexts: 16,
  viewport: { width: 1280, height: 900 },
});

export interface PoolStats {
  browsersLaunched: number;
  browsersRetired: number;
  /** Why each retired browser went: `pages`, `memory`, `disconnected`, `close`. */
  retiredFor: Record<string, number>;
  pagesOpen: number;
  waiting: number;
  pagesRendered: number;
  /** Renders that navigated a page kept from the host's earlier render instead of opening one. */
  pagesReused: number;
  /** Last reading of the current browser's process tree, null if unknown (or /proc unreadable). */
  lastMemory: { bytes: number; measure: 'pss' | 'rss' } | null;
  /** False once /proc could not be read: the memory limit is then not enforced. */
  memoryReadable: boolean;
}

interface HostContext {
  context: BrowserContext;
  active: number;
  /** A page kept from an earlier render of the host, on about:blank. */
  idle: Page | null;
}

interface BrowserEntry {
  id: number;
  browser: Promise<Browser>;
  marker: string;
  pid: Promise<number | null> | null;
  pagesStarted: number;
  active: number;
  retiring: string | null;
  closed: Promise<void> | null;
  hostContexts: Map<string, HostContext>;
}

/** A page lent by the pool for one render. Release it exactly once. */
export interface PageLease {
  page: Page;
  /** Waiting for a page slot. */
  queuedMs: number;
  /** Opening the page (and its context; a browser's launch too, for its first page). */
  openMs: number;
  /** `reusable`: the render ended cleanly, so the page may serve the host's next render. */
  release(reusable: boolean): Promise<void>;
}

/**
 * Browsers and the pages they lend. One browser serves at a time; a browser being retired finishes
 * its open pages while the next one takes new ones, and is closed when its last page is released.
 */
export class BrowserPool {
  private readonly options: BrowserPoolOptions;
  private current: BrowserEntry | null = null;
  private readonly entries = new Set<BrowserEntry>();
  private readonly waiters: Array<() => void> = [];
  private open = 0;
  private nextId = 1;
  private lastMemoryCheck = 0;
  private closing = false;
  private readonly stat: PoolStats = {
    browsersLaunched: 0,
    browsersRetired: 0,
    retiredFor: {},
    pagesOpen: 0,
    waiting: 0,
    pagesRendered: 0,
    pagesReused: 0,
    lastMemory: null,
    memoryReadable: true,
  };

  constructor(options: Partial<BrowserPoolOptions> = {}) {
    this.options = { ...DEFAULT_POOL_OPTIONS, ...options };
    if (!(this.options.maxOpenPages >= 1) || !(this.options.pagesPerBrowser >= 1)) throw new RangeError('maxOpenPages and pagesPerBrowser must be at least 1');
  }

  stats(): PoolStats {
    return { ...this.stat, retiredFor: { ...this.stat.retiredFor }, pagesOpen: this.open, waiting: this.waiters.length };
  }

  /** The pid of the browser taking new pages (null before the first page, or where /proc cannot be read). */
  async browserPid(): Promise<number | null> {
    const entry = this.current;
    if (entry === null) return null;
    await entry.browser;
    entry.pid ??= findPidByArgument(entry.marker);
    return entry.pid;
  }

  get isClosed(): boolean {
    return this.closing;
  }

  /** Waits for a page slot (or the signal), then opens a page for `host`. */
  async acquire(host: string, signal?: AbortSignal): Promise<PageLease> {
    const started = performance.now();
    await this.slot(signal);
    const slotted = performance.now();
    let entry: BrowserEntry | null = null;
    try {
      entry = this.browserForNewPage();
      entry.pagesStarted++;
      entry.active++;
      if (entry.pagesStarted >= this.options.pagesPerBrowser) this.retire(entry, 'pages');
      const browser = await entry.browser;
      const { context, hostContext } = await this.contextFor(entry, browser, host);
      let page = hostContext?.idle ?? null;
      if (hostContext !== null) hostContext.idle = null;
      if (page === null || page.isClosed()) {
        page = await context.newPage();
        // A window the page opens is not rendered (and its requests meet the context's refusal).
        page.on('popup', (popup) => void popup.close().catch(() => undefined));
      } else this.stat.pagesReused++;
      const leased = entry;
      const lent = page;
      let released = false;
      return {
        page,
        queuedMs: slotted - started,
        openMs: performance.now() - slotted,
        release: async (reusable) => {
          if (released) return;
          released = true;
          this.stat.pagesRendered++;
          if (hostContext === null) await context.close().catch(() => undefined);
          else {
            hostContext.active--;
            if (reusable && hostContext.idle === null && leased.retiring === null && (await this.blank(lent))) hostContext.idle = lent;
            else await lent.close({ runBeforeUnload: false }).catch(() => undefined);
          }
          await this.pageDone(leased);
        },
      };
    } catch (error) {
      if (entry !== null) {
        // A browser that cannot open a page is not trusted with the next one.
        this.retire(entry, 'error');
        await this.pageDone(entry);
      } else this.freeSlot();
      throw error;
    }
  }

  /** Waits for lent pages to come back, then closes every browser. */
  async close(): Promise<void> {
    this.closing = true;
    for (const wake of this.waiters.splice(0)) wake();
    while (this.open > 0) await new Promise<void>((resolve) => this.waiters.push(resolve));
    await Promise.all([...this.entries].map((entry) => this.retire(entry, 'close')));
  }

  private async slot(signal?: AbortSignal): Promise<void> {
    if (this.closing) throw new PoolClosedError();
    while (this.open >= this.options.maxOpenPages) {
      signal?.throwIfAborted();
      await new Promise<void>((resolve) => {
        const wake = (): void => {
          signal?.removeEventListener('abort', wake);
          const at = this.waiters.indexOf(wake);
          if (at !== -1) this.waiters.splice(at, 1);
          resolve();
        };
        this.waiters.push(wake);
        signal?.addEventListener('abort', wake, { once: true });
      });
      if (this.closing) throw new PoolClosedError();
    }
    signal?.throwIfAborted();
    this.open++;
  }

  private freeSlot(): void {
    this.open--;
    this.waiters.shift()?.();
  }

  private browserForNewPage(): BrowserEntry {
    if (this.current !== null && this.current.retiring === null) return this.current;
    const marker = `--trawl-render-browser=${randomUUID()}`;
    const entry: BrowserEntry = {
      id: this.nextId++,
      marker,
      browser: chromium.launch({
        executablePath: this.options.executablePath,
        headless: true,
        args: [...CHROMIUM_ARGS, ...(this.options.extraArgs ?? []), marker],
      }),
      pid: null,
      pagesStarted: 0,
      active: 0,
      retiring: null,
      closed: null,
      hostContexts: new Map(),
    };
    this.stat.browsersLaunched++;
    entry.browser.then(
      (browser) => browser.on('disconnected', () => void this.retire(entry, 'disconnected')),
      () => void this.retire(entry, 'launch-failed'),
    );
    this.entries.add(entry);
    this.current = entry;
    return entry;
  }

  private async contextFor(entry: BrowserEntry, browser: Browser, host: string): Promise<{ context: BrowserContext; hostContext: HostContext | null }> {
    if (this.options.contextScope === 'host') {
      const known = entry.hostContexts.get(host);
      if (known !== undefined) {
        entry.hostContexts.delete(host);
        entry.hostContexts.set(host, known);
        known.active++;
        return { context: known.context, hostContext: known };
      }
      for (const [oldHost, old] of entry.hostContexts) {
        if (entry.hostContexts.size < this.options.maxHostContexts) break;
        if (old.active > 0) continue;
        entry.hostContexts.delete(oldHost);
        void old.context.close().catch(() => undefined);
      }
      const hostContext: HostContext = { context: await this.newContext(browser), active: 1, idle: null };
      entry.hostContexts.set(host, hostContext);
      return { context: hostContext.context, hostContext };
    }
    return { context: await this.newContext(browser), hostContext: null };
  }

  /** Leaves the page on about:blank (its scripts stopped, its routes gone); false if it would not go. */
  private async blank(page: Page): Promise<boolean> {
    try {
      await page.goto('about:blank', { timeout: 2000 });
      await page.unrouteAll({ behavior: 'ignoreErrors' });
      return true;
    } catch {
      return false;
    }
  }

  private async newContext(browser: Browser): Promise<BrowserContext> {
    const context = await browser.newContext({
      viewport: this.options.viewport,
      ...(this.options.userAgent === undefined ? {} : { userAgent: this.options.userAgent }),
      // A service worker's fetches would not pass through page.route.
      serviceWorkers: 'block',
      acceptDownloads: false,
    });
    // page.route does not see WebSockets: answer each by closing it, so none reaches the network.
    await context.routeWebSocket(/.*/, (socket) => void socket.close().catch(() => undefined));
    // A render routes its page's requests through its hook; anything else in the context (a
    // popup, a page between renders) is refused here rather than left to the network.
    await context.route('**/*', (route) => void route.abort('blockedbyclient').catch(() => undefined));
    return context;
  }

  private async pageDone(entry: BrowserEntry): Promise<void> {
    entry.active--;
    this.freeSlot();
    if (entry.retiring === null) await this.checkMemory(entry);
    if (entry.retiring !== null && entry.active === 0) await this.closeBrowser(entry);
  }

  private async checkMemory(entry: BrowserEntry): Promise<void> {
    if (this.options.maxBrowserMemoryBytes <= 0 || !this.stat.memoryReadable) return;
    const now = performance.now();
    if (now - this.lastMemoryCheck < this.options.memoryCheckEveryMs) return;
    this.lastMemoryCheck = now;
    entry.pid ??= findPidByArgument(entry.marker);
    const pid = await entry.pid;
    const memory = pid === null ? null : await processTreeMemoryBytes(pid);
    if (memory === null) {
      this.stat.memoryReadable = false;
      return;
    }
    this.stat.lastMemory = memory;
    if (memory.bytes > this.options.maxBrowserMemoryBytes) this.retire(entry, 'memory');
  }

  private retire(entry: BrowserEntry, reason: string): Promise<void> {
    if (entry.retiring === null) {
      entry.retiring = reason;
      this.stat.browsersRetired++;
      this.stat.retiredFor[reason] = (this.stat.retiredFor[reason] ?? 0) + 1;
    }
    if (this.current === entry) this.current = null;
    if (entry.active === 0 || reason === 'close' || reason === 'disconnected') return this.closeBrowser(entry);
    return Promise.resolve();
  }

  private closeBrowser(entry: BrowserEntry): Promise<void> {
    entry.closed ??= entry.browser.then(
      (browser) => browser.close().catch(() => undefined),
      () => undefined,
    );
    this.entries.delete(entry);
    return entry.closed;
  }
}

export class PoolClosedError extends Error {
  constructor() {
    super('the browser pool is closed');
    this.name = 'PoolClosedError';
  }
}

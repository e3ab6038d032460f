import type { Redis } from '@trawl/redis';

/** What every process counts; summed across processes in `<namespace>:stats`. */
export const COUNTERS = [
  'fetched',
  'bytes',
  'status2xx',
  'status3xx',
  'status4xx',
  'status5xx',
  'fetchErrors',
  'retries',
  'dead',
  'deferred',
  /** Jobs sent back to wait for their server address's (or domain's) turn (TRAWL_POLITENESS_KEY, TRAWL_IP_*). */
  'addressDeferred',
  'stale',
  'linksFound',
  'urlsNew',
  'urlsPushed',
  /** URLs queued in PostgreSQL rather than Redis, past TRAWL_FRONTIER_REDIS_MAX_URLS (a refill brings them back). */
  'urlsSpilled',
  'bloomFalsePositives',
  'outOfScope',
  'tooDeep',
  'invalidUrls',
  'redirects',
  'overBudget',
  'overQueryVariants',
  'trapped',
  'repaired',
  'robotsFetched',
  'robotsUnavailable',
  'robotsDisallowed',
  /** Links recorded as skipped, never fetched, for their file extension (TRAWL_SKIP_EXTENSIONS). */
  'skippedExtensions',
  'nofollowPages',
  'tooManyRedirects',
  'throttled',
  /** Responses and failures that looked like the host refusing the crawler (403, 429 without Retry-After, a challenge page, a reset at once). */
  'blockSignals',
  /** Hosts judged blocked and moved up a proxy tier. */
  'hostsEscalated',
  /** Hosts judged blocked with no proxy tier left: paused. */
  'hostsBlocked',
  'ssrfBlocked',
  'recrawlsQueued',
  'notModified',
  'sitemapsFetched',
  'sitemapUrls',
  /** Sitemap entries skipped for standing outside the sitemap's location (sitemaps.org). */
  'sitemapOutside',
  /** Jobs the gate turned away because an operator paused their host (the URL went back to the frontier). */
  'pausedReturned',
  /** Bodies identical to an earlier page's (TRAWL_NEAR_DUP_*). */
  'duplicatesExact',
  /** Pages whose text is within the SimHash distance of an earlier page's. */
  'duplicatesNear',
  /** Bodies fetched but not kept (near-duplicates under TRAWL_NEAR_DUP_STORE_BODY=false). */
  'bodiesNotStored',
  /** Jobs that found their URL recorded already (a redelivered job, a URL back from an expired lease or a rebuild) and did not fetch it again. */
  'alreadyRecorded',
  /** Jobs whose lease expired while they were still working (their URL went back to the frontier). */
  'leasesLost',
  /** Pages the fetch stage handed to the process stage (stored, on a process stream). */
  'handedOff',
  /** Pages the process stage recorded. */
  'processed',
  /** Process stream entries left for a retry after processing failed (PostgreSQL, the store). */
  'processRetries',
  /** Process stream entries that could not be read (not a page the fetch stage wrote): dropped. */
  'processInvalid',
  /** Pages rendered in headless Chromium (TRAWL_RENDER), and renders that failed (the page kept as fetched). */
  'rendered',
  'renderFailed',
  /** Requests rendered pages made through the fetcher (scripts, data; not those answered from the subresource cache). */
  'renderRequests',
  /**
   * Requests rendered pages made to other hosts (TRAWL_RENDER_OTHER_HOSTS, TRAWL_RENDER_ALLOW_HOSTS):
   * fetched under a borrow of that host's gate, and refused (the host busy or not due, its
   * robots.txt not cached or disallowing, paused).
   */
  'renderBorrowed',
  'renderBorrowRefused',
  /** Pages a fetch stage without the `render` role handed, host held, to a render stage. */
  'renderHandedOver',
  /** Pages to render processed unrendered: no render stage was alive, or the render stage no longer held the page's host. */
  'renderNoWorker',
  'renderLeaseLost',
] as const;
export type CounterName = (typeof COUNTERS)[number];
export type CounterValues = Record<CounterName, number>;

/** Told of every count as it happens in this process (e.g. Prometheus counters). */
export type CounterListener = (name: CounterName, by: number) => void;

export const zeroCounters = (): CounterValues => Object.fromEntries(COUNTERS.map((c) => [c, 0])) as CounterValues;

/**
 * In-process counters, flushed to Redis with one HINCRBY pipeline every `flushMs` (never a
 * round trip per event). The crawl's progress and summary read the sum.
 */
export class Counters {
  private pending = zeroCounters();
  private dirty = false;
  private timer: NodeJS.Timeout | undefined;
  private listeners: CounterListener[] = [];
  readonly local = zeroCounters();
  private readonly key: string;

  constructor(
    private readonly redis: Redis,
    namespace: string,
    private readonly flushMs = 500,
  ) {
    this.key = `${namespace}:stats`;
  }

  add(name: CounterName, by = 1): void {
    if (by === 0) return;
    this.pending[name] += by;
    this.local[name] += by;
    for (const listener of this.listeners) listener(name, by);
    this.dirty = true;
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      void this.flush().catch(() => undefined);
    }, this.flushMs);
  }

  /**
   * A count another thread of this process made and sent to Redis itself: told to the listeners
   * (this process's metrics) and kept in `local`, never flushed again.
   */
  echo(name: CounterName, by: number): void {
    if (by === 0) return;
    this.local[name] += by;
    for (const listener of this.listeners) listener(name, by);
  }

  /**
   * Calls `listener` for every count from now on (this process's, not the crawl's totals):
   * how metrics see the pipeline without a call of their own in it. Returns the unsubscribe.
   */
  observe(listener: CounterListener): () => void {
    this.listeners.push(listener);
    return () => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    };
  }

  async flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (!this.dirty) return;
    const batch = this.pending;
    this.pending = zeroCounters();
    this.dirty = false;
    const pipeline = this.redis.pipeline();
    for (const name of COUNTERS) if (batch[name] !== 0) pipeline.hincrby(this.key, name, batch[name]);
    await pipeline.exec();
  }

  /** The crawl-wide totals. */
  async read(): Promise<CounterValues> {
    const raw = await this.redis.hgetall(this.key);
    const values = zeroCounters();
    for (const name of COUNTERS) values[name] = Number(raw[name] ?? 0);
    return values;
  }
}

import type { Clock } from '@trawl/core';
import type { Sitemaps } from '@trawl/db';
import type { Fetcher } from '@trawl/fetch';
import type { Frontier } from '@trawl/frontier';
import type { Counters, Discovery, PolicyFollower, Timings } from '@trawl/model';
import type { BlockOptions, RetryPolicy } from '@trawl/politeness';
import type { RobotsCache } from '@trawl/robots';
import type { ContentStore } from '@trawl/store';
import type { Logger } from '@trawl/telemetry';
import type { RecentBodies } from './bodies.js';
import type { AddressTurns } from './fetch/address-step.js';
import type { RenderHandOverDeps } from './fetch/render-hand-over.js';
import type { RenderDeps } from './fetch/render-step.js';
import type { PageAnalyzer } from './process/analyzer.js';
import type { CrawlArchive } from './process/archive.js';
import type { Duplicates } from './process/duplicates.js';
import type { Acks, Records, UrlStates, Validators } from './records.js';

/** What the fetch-job pipeline works with: the crawl's state, its writers and its policies. */
export interface PipelineDeps {
  frontier: Pick<Frontier, 'acquire' | 'release' | 'extendLease' | 'clearFetched' | 'handOff' | 'passHold' | 'markHandedToRender' | 'takeHost' | 'borrowHost' | 'returnHost'>;
  fetcher: Pick<Fetcher, 'fetch' | 'fetchRobots'>;
  store: ContentStore;
  robots: Pick<RobotsCache, 'get' | 'set'>;
  discovery: Pick<Discovery, 'add'>;
  records: Pick<Records, 'add'>;
  acks: Pick<Acks, 'ack'>;
  policy: Pick<PolicyFollower, 'get' | 'refresh'>;
  counters: Pick<Counters, 'add'>;
  /** Where the fetch stage reports how late each fetch started (absent: not measured). */
  timings?: Pick<Timings, 'record'>;
  clock: Clock;
  logger: Logger;
  /** A URL's own retry schedule (tries, fewer after timeouts, delays). */
  retry: RetryPolicy;
  leaseMs: number;
  /**
   * How often a working job renews its lease and, once it has fetched its page, says it is alive
   * (default a third of the lease). A job handed over while its first attempt still records waits
   * for three missed renewals before fetching again: keep this well under the BullMQ lock
   * (TRAWL_STALLED_MS) so a dead attempt's pages come back about as fast as its jobs.
   */
  renewEveryMs?: number;
  /** A job whose host is due within this long waits in the worker instead of the delayed set. */
  gateWaitMs: number;
  /**
   * The address gate, taken after the host gate and before the request (robots.txt included):
   * the politeness group per server address or registrable domain, and the per-address cap
   * (absent: none).
   */
  addresses?: AddressTurns;
  recordSitemaps?: (origin: string, urls: string[]) => Promise<void>;
  /** The stored validators of a re-crawled page, for its conditional GET. */
  validators?: Pick<Validators, 'headers'>;
  /** Where sitemap jobs report (absent: sitemaps are off). */
  sitemaps?: SitemapDeps;
  /** Where HTML pages are decoded, parsed and fingerprinted (absent: on the calling thread). */
  analyzer?: PageAnalyzer;
  /**
   * Store each page's extracted text beside its body (TRAWL_CONTENT_STORE_TEXT). Absent or false:
   * only a text that the stored body cannot give back (its body was not kept) is stored.
   */
  storeText?: boolean;
  /** Duplicate detection (absent: every body counts as new). */
  duplicates?: Pick<Duplicates, 'classify'>;
  /** WARC records written while crawling (TRAWL_WARC_WRITE; absent: none). */
  archive?: Pick<CrawlArchive, 'page' | 'notModified'>;
  /**
   * Whether a URL is recorded already, for jobs that may repeat finished work (absent: never
   * asked, every job fetches).
   */
  urlStates?: Pick<UrlStates, 'state'>;
  /** Bodies just stored, for a process stage in this process to read without the store (absent: none kept). */
  bodies?: Pick<RecentBodies, 'put' | 'take'>;
  /** Headless rendering in the fetch stage (TRAWL_RENDER; absent: `never`, no page is rendered). */
  render?: RenderDeps;
  /**
   * A fetch stage without the `render` role: the pages it would render go to a render stage, their
   * host still held (absent: rendering is `never`, or this stage renders itself). Never with `render`.
   */
  renderHandOver?: RenderHandOverDeps;
  /** Telling a blocked host from a slow one, and what is done about it (absent: refusals are not looked for). */
  blocking?: BlockingDeps;
}

/** What happens to a host judged blocked: moved up a proxy tier, or paused when none is left. */
export interface BlockingDeps {
  options: BlockOptions;
  /** The proxy tier of a host moved `level` tiers up (null: no proxies), and whether one above it is left. */
  tierOf: (host: string, level: number) => { tier: string | null; canEscalate: boolean };
  /** Pauses a blocked host with no tier left, keeping its reason (in the frontier and for operators). */
  pause: (host: string, reason: string) => Promise<void>;
  /** Told of each host judged blocked (metrics, logs). `tier`: the tier that refused it. */
  onBlocked?: (event: { host: string; tier: string; action: 'escalated' | 'paused'; reason: string; toTier: string | null }) => void;
}

/** Where a sitemap's fetch lands: the sitemaps table, and the frontier for pages due now. */
export interface SitemapDeps {
  store: Pick<Sitemaps, 'recordFetch' | 'add' | 'placeOf' | 'lastChecked' | 'takePages'>;
  frontier: Pick<Frontier, 'push'>;
  markQueued: (hashes: readonly Buffer[]) => Promise<void>;
  /** Entries read from one file at most. */
  maxEntries: number;
}

/** What a crawl worker shares across its partitions' consumers: the pipeline and its batchers (drained on stop). */
export type CrawlWorkerDeps = PipelineDeps & {
  discovery: Pick<Discovery, 'add' | 'drain'>;
  records: Pick<Records, 'add' | 'drain'>;
  acks: Pick<Acks, 'ack' | 'drain'>;
  counters: Pick<Counters, 'add' | 'flush'>;
  /** Closed (its last WARC file finished) when the worker stops. */
  archive?: Pick<CrawlArchive, 'page' | 'notModified' | 'close'>;
};

/** What a synthetic web is made of, and the hook for hostile hosts. */
import type http from 'node:http';
import type { ChangeOptions } from './changes.js';
import { TestWebError, TestWebErrorCode } from './errors.js';
import type { FileKind } from './files.js';
import type { RequestLogEntry } from './log.js';
import type { VariantKind } from './model.js';
import type { PageProfile } from './profile.js';
import { hostLatencyMs, responseLatencyMs } from './profile.js';
import type { SitemapOptions } from './sitemap.js';
import { hashInts, mulberry32 } from './prng.js';

export interface TestWebOptions {
  hosts: number;
  /** Pages per host, ids 0..n-1; page 0 is the root `/`. */
  pagesPerHost: number;
  /** Intra-host followable links per page, the p → p+1 link included (it is always there). */
  linksPerPage: number;
  /** Links per page to pages on other hosts; the root's first one goes to the next host's root. */
  crossHostLinks: number;
  /** Delay before the response headers, fixed or uniform in [min, max]. Applies to handlers too. */
  latencyMs?: number | { min: number; max: number };
  seed?: number;
  /** First host address; default 127.1.0.1. Must be in 127.0.0.0/8. */
  baseAddress?: string;
  /** Default 0: choose a free port. */
  port?: number;
  /** Default true: non-canonical link forms, `<base href>`, mailto/javascript/tel and rel=nofollow links. */
  noisyLinks?: boolean;
  /** Default = noisyLinks: every fifth page (3, 8, 13, …) lives at `/q?a=<id>&b=<n>`. */
  queryPages?: boolean;
  /** Approximate HTML body size; default 2048. */
  pageBytes?: number;
  /** Body of /robots.txt; null → 404. Default: `User-agent: *\nAllow: /\n`. */
  robotsTxt?: (hostIndex: number) => string | null;
  /** Per-host override, so hostile hosts (traps, 429s, tarpits) are declared as data. */
  hostHandlers?: Record<number, HostHandler>;
  /**
   * Give hosts DNS names instead of bare addresses: host i becomes `h<i>.<hostnames>` (e.g.
   * `h3.web.test`), still served on its own loopback address. Clients resolve the names with
   * `TestWeb.hostsFile()` / `addressOf()` (trawl: TRAWL_HOSTS_FILE). Crawlers that key politeness
   * by registrable domain (and skip IP addresses) need names to be polite at all.
   */
  hostnames?: string;
  /**
   * Hosts after the link table's `hosts`, on the next addresses (indexes hosts … hosts+extraHosts−1).
   * No page links to them and groundTruth ignores them; they are served by their hostHandlers
   * (without one, only /robots.txt and 404s). Default 0. The hostile web is built on them.
   */
  extraHosts?: number;
  /** Ports tried when a later address has the chosen port taken; default 10. */
  bindAttempts?: number;
  /** Pages of particular link-table hosts (host index → count) instead of pagesPerHost: a surge host beside normal ones. */
  pagesPerHostOverride?: Record<number, number>;
  /** The web's clock, epoch ms: page versions, Last-Modified, Date and sitemap lastmod follow it. Default Date.now. The log keeps real time. */
  now?: () => number;
  /**
   * The changing web: pages change content (never links) on a schedule; pages and variants then
   * carry ETag and Last-Modified and answer conditional requests with 304. Without it nothing
   * changes on its own (touch() still does) and no validators are sent.
   */
  changes?: ChangeOptions;
  /** Sitemaps (and `Sitemap:` lines in robots.txt) on link-table hosts. */
  sitemaps?: SitemapOptions;
  /** Words of prose per page (title, dateline, paragraphs) instead of padding; default 300 with `duplicates`, else off. */
  proseWords?: number | null;
  /** Planted duplicates: variants of some pages, and mirror hosts. Needs prose. */
  duplicates?: DuplicateOptions;
  /** Links from pages to binary files (not HTML: groundTruth lists them apart, in `.files`). */
  fileLinks?: FileLinkOptions;
  /**
   * Pages that look like the web (profile.ts, `REALISTIC_PROFILE`): heavy-tailed sizes, prose,
   * headings, navigation and footer, a drawn number of links per page (replacing `linksPerPage`),
   * and per-host response times (replacing `latencyMs`). Validated with zod at start. Cannot be
   * combined with `pageBytes`, `proseWords`, `latencyMs` or `duplicates`. Default: none (tiny pages).
   */
  profile?: PageProfile;
  /**
   * Keep rendered pages in memory, up to this many bytes (see `TestWeb.warmPages`), instead of
   * drawing each page on every request. For benchmarks: it takes the web's serving off the cores
   * the crawler is measured on. Default 0: every request draws its page.
   */
  pageCacheBytes?: number;
}

export interface DuplicateOptions {
  /** Link-table hosts whose pages get variants; default every one. */
  hosts?: readonly number[];
  /** Share of pages (the root aside) with a variant; default 0.2. 0 = mirrors only. */
  share?: number;
  /** Kinds drawn from, per page; default all: near, print, session-path, session-query. */
  kinds?: readonly VariantKind[];
  /**
   * Hosts to mirror: one mirror host per entry, after the extra hosts (index hosts + extraHosts + j),
   * serving byte-identical copies of that host's pages, variants and files at the same paths.
   * Nothing links to a mirror: seed its root (rootUrls() and describe().seeds include it).
   */
  mirrors?: readonly number[];
}

export interface FileLinkOptions {
  /** Mean file links per page (fractions are drawn per page). */
  perPage: number;
  /** Default all: pdf, jpg, png, zip, mp4, docx, exe, woff2. */
  kinds?: readonly FileKind[];
  /** Link-table hosts whose pages link files; default every one. */
  hosts?: readonly number[];
}

export interface HostHandlerContext {
  hostIndex: number;
  origin: string;
  /** What the default web calls this request (see RequestLogEntry.pageKey). */
  pageKey: string | null;
  /** Merges fields into this request's log entry (pageKey, note, …). */
  log: (extra: Partial<RequestLogEntry>) => void;
  /** Sends the default synthetic response (page, robots.txt, 404): a handler may misbehave only sometimes. */
  serve: () => void;
  /** Aborted by stop(): a tarpit should stop waiting. */
  signal: AbortSignal;
}

export type HostHandler = (
  req: http.IncomingMessage,
  res: http.ServerResponse,
  ctx: HostHandlerContext,
) => void | Promise<void>;

/** Draws each response delay of a host: fixed, or uniform in [min, max] from a seeded stream. */
export function latencySource(option: TestWebOptions['latencyMs'], seed: number): (host: number) => number {
  const { min, max } = typeof option === 'number' ? { min: option, max: option } : (option ?? { min: 0, max: 0 });
  if (!(min >= 0 && max >= min && Number.isFinite(max))) {
    throw new TestWebError(TestWebErrorCode.Options, `latencyMs must satisfy 0 ≤ min ≤ max, got ${JSON.stringify(option)}`);
  }
  const random = mulberry32(hashInts(seed, 0x1a7));
  return () => (max === min ? min : min + random() * (max - min));
}

/** Draws each response delay of a host from the profile: the host's own time, jittered from the host's seeded stream. */
export function profileLatencySource(profile: PageProfile, seed: number): (host: number) => number {
  const hosts = new Map<number, { ms: number; random: () => number }>();
  return (host) => {
    let state = hosts.get(host);
    if (state === undefined) {
      state = { ms: hostLatencyMs(profile, seed, host), random: mulberry32(hashInts(seed, host, 0x1a7)) };
      hosts.set(host, state);
    }
    return responseLatencyMs(profile, state.ms, state.random);
  };
}

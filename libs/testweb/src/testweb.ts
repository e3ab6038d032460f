/**
 * The synthetic web: one Node process serving many hosts, each on its own loopback address,
 * all on one port. Pages come from the link table (model.ts); every request is logged so tests
 * judge the crawler from the server's side.
 */
import { setMaxListeners } from 'node:events';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { describeError, sleep } from '@trawl/core';
import { hostAddresses } from './address.js';
import type { ChangeClass, PageVersion } from './changes.js';
import { ChangeSchedule } from './changes.js';
import type { DuplicateInfo } from './duplicates.js';
import { duplicateClusters } from './duplicates.js';
import { TestWebError, TestWebErrorCode } from './errors.js';
import { FILE_KINDS } from './files.js';
import { closeServers, listenAll } from './listen.js';
import type { RequestLogEntry, ResourceKind } from './log.js';
import type { Link, LinkAnchor, LinkNoise, PageRef, VariantKind, WalkItem, WebModel } from './model.js';
import {
  contentHost,
  createWebModel,
  filePath,
  linkHost,
  lookupResource,
  pageHosts,
  pagePath,
  pagesOf,
  pageSpec,
  servesPages,
  totalPages,
  VARIANT_KINDS,
  variantPath,
  walkWeb,
} from './model.js';
import type { HostHandler, TestWebOptions } from './options.js';
import { latencySource, profileLatencySource } from './options.js';
import type { PageProfile } from './profile.js';
import { describeProfile, parsePageProfile } from './profile.js';
import { paragraphPool, SITE_SCRIPT_PATH } from './realistic.js';
import type { OriginOf } from './render.js';
import { baseHref, hrefOf, renderVariant } from './render.js';
import { requestKey } from './request-key.js';
import type { DefaultSite, ServedResource } from './respond.js';
import { PageCache } from './page-cache.js';
import { countBodyBytes, DEFAULT_ROBOTS_TXT, failResponse, pageBody, pageBytes, serveDefault } from './respond.js';
import { SitemapConfig } from './sitemap.js';

/** A link of a page as emitted, with the canonical URL it names. */
export interface RenderedLink {
  kind: Link['kind'];
  href: string;
  rel: string | null;
  /** Canonical URL of the target (page, variant, file or nofollow page) on the host it lands on; null for mailto/javascript/tel. */
  url: string | null;
  /** Whether a correct crawler follows it (and groundTruth lists it): pages and variants; files are not HTML. */
  follow: boolean;
  anchor: LinkAnchor | null;
  noise: LinkNoise | null;
}

/** JSON-able summary for a CLI or a benchmark report. */
export interface TestWebSummary {
  hosts: number;
  /** Hosts served only by their handlers, after the link table's hosts (see TestWebOptions.extraHosts). */
  extraHosts: number;
  pagesPerHost: number;
  totalPages: number;
  linksPerPage: number;
  crossHostLinks: number;
  noisyLinks: boolean;
  queryPages: boolean;
  seed: number;
  port: number;
  baseAddress: string;
  /** The first three origins. */
  origins: string[];
  lastOrigin: string;
  /** Seeds that reach every page of the link table with scope 'any', then every mirror's root. */
  seeds: string[];
  /** Page counts of particular hosts (pagesPerHostOverride). */
  pagesPerHostOverride: Record<number, number>;
  /** Mirror host indexes, after the extra hosts. */
  mirrorHosts: number[];
  /** The page profile in one line (describeProfile), or null for the tiny pages. */
  profile: string | null;
}

/**
 * What a correct crawl fetches: canonical URLs of HTML pages (link-table pages, mirrors' pages,
 * duplicate variants). Linked files are not HTML: they are in `files`, apart. It is a plain Set
 * with `files` as a non-enumerable property, so it still equals a Set of the same URLs.
 */
export type GroundTruth = Set<string> & { readonly files: Set<string> };

function groundTruthSet(): GroundTruth {
  return Object.defineProperty(new Set<string>(), 'files', { value: new Set<string>(), enumerable: false }) as GroundTruth;
}

/** A page-like URL resolved: the host serving it, the page it shows and, for a variant, which. */
export interface ResolvedPage {
  host: number;
  /** The link-table host whose content it is (a mirror's original). */
  contentHost: number;
  page: number;
  variant: VariantKind | null;
}

const hrNow = (): number => performance.timeOrigin + performance.now();

export class TestWeb {
  /** Every request, in arrival order; entries are completed in place when responses finish. */
  readonly log: RequestLogEntry[] = [];
  readonly model: WebModel;
  private readonly addresses: string[];
  private readonly site: DefaultSite;
  private readonly handlers: Record<number, HostHandler>;
  private readonly latency: (host: number) => number;
  /** The page profile (realistic pages and latencies), or null for the tiny pages. */
  readonly profile: PageProfile | null;
  private readonly hostnames: string | undefined;
  private readonly clock: () => number;
  private readonly changes: ChangeSchedule;
  private readonly sitemaps: SitemapConfig | null;
  private readonly stopping = new AbortController();
  private servers: http.Server[] = [];
  private boundPort = 0;
  private originList: string[] = [];
  /** `address:port` per host, shared by every log entry of that host. */
  private hostKeys: string[] = [];
  private readonly originOf: OriginOf = (host) => this.originList[host] ?? '';
  private originIndex = new Map<string, number>();
  private stopped: Promise<void> | null = null;
  private inFlight = 0;
  private idleWaiters: (() => void)[] = [];

  private constructor(options: TestWebOptions) {
    const noisyLinks = options.noisyLinks ?? true;
    const extraHosts = options.extraHosts ?? 0;
    if (!(Number.isSafeInteger(extraHosts) && extraHosts >= 0)) {
      throw new TestWebError(TestWebErrorCode.Options, `extraHosts must be an integer ≥ 0, got ${extraHosts}`);
    }
    const duplicates = options.duplicates;
    const profile = options.profile === undefined ? null : parsePageProfile(options.profile);
    if (profile !== null) {
      const clashes = (['pageBytes', 'proseWords', 'latencyMs', 'duplicates'] as const).filter((key) => options[key] !== undefined);
      if (clashes.length > 0) {
        throw new TestWebError(TestWebErrorCode.Options, `profile sets page sizes, prose and latency itself: drop ${clashes.join(', ')}`);
      }
    }
    this.profile = profile;
    const proseWords = options.proseWords === undefined ? (duplicates ? 300 : null) : options.proseWords;
    if (proseWords !== null && !(Number.isSafeInteger(proseWords) && proseWords >= 20)) {
      throw new TestWebError(TestWebErrorCode.Options, `proseWords must be null or an integer ≥ 20, got ${proseWords}`);
    }
    if (duplicates && proseWords === null) {
      throw new TestWebError(TestWebErrorCode.Options, 'duplicates need prose pages (proseWords): padded pages share their padding');
    }
    this.model = createWebModel({
      hosts: options.hosts,
      pagesPerHost: options.pagesPerHost,
      linksPerPage: options.linksPerPage,
      crossHostLinks: options.crossHostLinks,
      seed: options.seed ?? 1,
      noisyLinks,
      queryPages: options.queryPages ?? noisyLinks,
      pagesPerHostOverride: options.pagesPerHostOverride,
      mirrors: duplicates?.mirrors,
      mirrorBase: options.hosts + extraHosts,
      variants: duplicates ? { hosts: duplicates.hosts ?? null, share: duplicates.share ?? 0.2, kinds: duplicates.kinds ?? VARIANT_KINDS } : null,
      files: options.fileLinks ? { hosts: options.fileLinks.hosts ?? null, perPage: options.fileLinks.perPage, kinds: options.fileLinks.kinds ?? FILE_KINDS } : null,
      layout: profile === null ? null : { links: profile.links, navLinks: profile.navLinks, footerLinks: profile.footerLinks, noisyShare: profile.noisyLinkShare },
    });
    this.addresses = hostAddresses(options.baseAddress ?? '127.1.0.1', options.hosts + extraHosts + (duplicates?.mirrors?.length ?? 0));
    const pageBytes = options.pageBytes ?? 2048;
    if (!(pageBytes >= 0 && Number.isFinite(pageBytes))) {
      throw new TestWebError(TestWebErrorCode.Options, `pageBytes must be ≥ 0, got ${pageBytes}`);
    }
    this.clock = options.now ?? Date.now;
    this.changes = new ChangeSchedule(this.model.seed, options.changes ?? {}, this.clock());
    this.sitemaps = options.sitemaps ? new SitemapConfig(options.sitemaps, options.hosts) : null;
    this.site = {
      model: this.model,
      pageBytes,
      proseWords,
      profile,
      robotsTxt: options.robotsTxt ?? (() => DEFAULT_ROBOTS_TXT),
      originOf: this.originOf,
      now: this.clock,
      changes: this.changes,
      validators: options.changes !== undefined,
      sitemaps: this.sitemaps,
      signal: this.stopping.signal,
      pageCache: null,
    };
    const pageCacheBytes = options.pageCacheBytes ?? 0;
    if (!(Number.isSafeInteger(pageCacheBytes) && pageCacheBytes >= 0)) {
      throw new TestWebError(TestWebErrorCode.Options, `pageCacheBytes must be an integer ≥ 0, got ${pageCacheBytes}`);
    }
    if (pageCacheBytes > 0) this.site.pageCache = new PageCache(pageCacheBytes);
    this.handlers = options.hostHandlers ?? {};
    if (options.hostnames !== undefined && !/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(options.hostnames)) {
      throw new TestWebError(TestWebErrorCode.Options, `hostnames must be a lowercase DNS suffix such as "web.test", got ${JSON.stringify(options.hostnames)}`);
    }
    this.hostnames = options.hostnames;
    this.latency = profile === null ? latencySource(options.latencyMs, this.model.seed) : profileLatencySource(profile, this.model.seed);
    // The paragraph pool is built once per seed: build it now, not inside the first response.
    if (profile !== null) paragraphPool(this.model.seed);
    // Every delayed request and every tarpit listens for stop(); thousands may wait at once.
    setMaxListeners(0, this.stopping.signal);
  }

  static async start(options: TestWebOptions): Promise<TestWeb> {
    const web = new TestWeb(options);
    const port = options.port ?? 0;
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      throw new TestWebError(TestWebErrorCode.Options, `port must be 0..65535, got ${port}`);
    }
    const bound = await listenAll(web.addresses, (i) => web.createServer(i), port, options.bindAttempts ?? 10);
    web.servers = bound.servers;
    web.boundPort = bound.port;
    web.hostKeys = web.addresses.map((address, i) => `${web.hostnames ? `h${i}.${web.hostnames}` : address}:${bound.port}`);
    web.originList = web.hostKeys.map((hostKey) => `http://${hostKey}`);
    web.originIndex = new Map(web.originList.map((origin, i) => [origin, i]));
    return web;
  }

  get port(): number {
    return this.boundPort;
  }

  /** The loopback address serving a host name (with `hostnames`), or undefined. */
  addressOf(hostname: string): string | undefined {
    if (!this.hostnames) return undefined;
    const match = /^h(\d+)\./.exec(hostname);
    return match && hostname.slice(match[0].length) === this.hostnames ? this.addresses[Number(match[1])] : undefined;
  }

  /** hosts(5) lines mapping every host name to its address (empty without `hostnames`). */
  hostsFile(): string {
    if (!this.hostnames) return '';
    return this.addresses.map((address, i) => `${address}\th${i}.${this.hostnames}\n`).join('');
  }

  /** `http://127.1.0.1:PORT`, … one per host, in host-index order (extra hosts last). */
  get origins(): string[] {
    return this.originList;
  }

  /** Resolves once no request is in flight (every log entry has its end), e.g. before analyzeLog. */
  idle(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  clearLog(): void {
    this.log.length = 0;
  }

  /** `/` of every host, extra hosts included. */
  rootUrls(): string[] {
    return this.originList.map((origin) => `${origin}/`);
  }

  /** Canonical URL of a page. */
  pageUrl(hostIndex: number, pageId: number): string {
    this.checkPage(hostIndex, pageId);
    return `${this.originList[hostIndex]}${pagePath(this.model, hostIndex, pageId)}`;
  }

  /** The host index serving a URL's origin, or null if the URL is not on this web. */
  hostIndexOf(url: string): number | null {
    try {
      return this.originIndex.get(new URL(url).origin) ?? null;
    } catch {
      return null;
    }
  }

  /**
   * Canonical URLs of every page reachable from `seeds` by following links (variants included),
   * restricted to hosts allowed by `scope` ('any', or 'host' = only the seeds' hosts), and to
   * URLs `allow` accepts (e.g. a robots.txt a test declared). Linked files are in `.files`.
   * Seeds that name no page of this web are ignored.
   */
  groundTruth(seeds: readonly string[], scope: 'any' | 'host' = 'any', options: { allow?: (url: string) => boolean } = {}): GroundTruth {
    const result = groundTruthSet();
    const refs: PageRef[] = [];
    for (const seed of seeds) {
      const host = this.hostIndexOf(seed);
      if (host === null || !servesPages(this.model, host)) continue;
      const url = new URL(seed);
      const key = requestKey(url.pathname + url.search);
      const resource = key === null ? null : lookupResource(this.model, host, key);
      if (resource?.kind === 'page') refs.push({ host, page: resource.page });
      else if (resource?.kind === 'nofollow' && (options.allow?.(`${this.originList[host]}${key}`) ?? true)) {
        result.add(`${this.originList[host]}${key}`);
      }
    }
    const hosts = scope === 'host' ? new Set(refs.map((ref) => ref.host)) : null;
    const allow = options.allow;
    for (const item of walkWeb(this.model, refs, hosts, allow && ((item) => allow(this.itemUrl(item))))) {
      if (item.kind === 'file') result.files.add(this.itemUrl(item));
      else result.add(this.itemUrl(item));
    }
    return result;
  }

  /** Canonical URL of what a walk reached. */
  private itemUrl(item: WalkItem): string {
    const origin = this.originList[item.host] ?? '';
    switch (item.kind) {
      case 'page':
        return `${origin}${pagePath(this.model, item.host, item.page)}`;
      case 'variant':
        return `${origin}${variantPath(this.model, item.host, item.page, item.variant)}`;
      case 'file':
        return `${origin}${filePath(item.page, item.index, item.file)}`;
    }
  }

  /** The links of a page exactly as its HTML carries them, in order (a mirror's are its original's; `url` says where each lands). */
  links(hostIndex: number, pageId: number): RenderedLink[] {
    this.checkPage(hostIndex, pageId);
    const spec = pageSpec(this.model, hostIndex, pageId);
    const urlOf = (link: Link): string | null => {
      const origin = this.originList[linkHost(this.model, spec, link, hostIndex)] ?? '';
      switch (link.kind) {
        case 'page':
          return `${origin}${pagePath(this.model, link.target.host, link.target.page)}`;
        case 'nofollow':
          return `${origin}/nofollow/${link.id}`;
        case 'variant':
          return `${origin}${variantPath(this.model, spec.ref.host, link.page, link.variant)}`;
        case 'file':
          return `${origin}${filePath(link.page, link.index, link.file)}`;
        default:
          return null;
      }
    };
    return spec.links.map((link) => ({
      kind: link.kind,
      href: hrefOf(this.model, spec, link, this.originOf),
      rel: link.kind === 'nofollow' ? link.rel : null,
      url: urlOf(link),
      follow: link.kind === 'page' || link.kind === 'variant',
      anchor: link.kind === 'page' ? link.anchor : null,
      noise: link.kind === 'page' ? link.noise : null,
    }));
  }

  /** The page's `<base href>` value, or null. */
  baseHref(hostIndex: number, pageId: number): string | null {
    this.checkPage(hostIndex, pageId);
    return baseHref(pageSpec(this.model, hostIndex, pageId), this.originOf);
  }

  /**
   * Draws every page of every host at its version now into the page cache (`pageCacheBytes`), so
   * that serving the crawl that follows costs a copy per request: a benchmark calls it before it
   * times anything. Returns the pages and bytes kept (0 without a cache).
   */
  warmPages(): { pages: number; bytes: number } {
    const cache = this.site.pageCache;
    if (cache === null) return { pages: 0, bytes: 0 };
    const at = this.clock();
    for (const host of pageHosts(this.model)) {
      for (let page = 0; page < pagesOf(this.model, host); page += 1) {
        pageBytes(this.site, host, page, this.changes.state(contentHost(this.model, host), page, at).version);
      }
    }
    return { pages: cache.count, bytes: cache.bytes };
  }

  /** The HTML body the server sends for a page now (or at `at`, on the web's clock). */
  html(hostIndex: number, pageId: number, at = this.clock()): string {
    this.checkPage(hostIndex, pageId);
    const version = this.changes.state(contentHost(this.model, hostIndex), pageId, at).version;
    return pageBody(this.site, hostIndex, pageId, version);
  }

  /** The HTML the server sends for a page or variant URL now (or at `at`); null for anything else. */
  htmlOf(url: string, at = this.clock()): string | null {
    const resolved = this.resolvePage(url);
    if (resolved === null) return null;
    if (resolved.variant === null) return this.html(resolved.host, resolved.page, at);
    const version = this.changes.state(resolved.contentHost, resolved.page, at).version;
    return renderVariant(this.model, resolved.host, resolved.page, resolved.variant, this.originOf, this.site.proseWords ?? 0, version);
  }

  /** The web's clock (epoch ms). */
  now(): number {
    return this.clock();
  }

  /** When every page's version 0 began (epoch ms). */
  get epoch(): number {
    return this.changes.epoch;
  }

  /** The page (or variant's page) a URL of this web shows, in any link form the server accepts; null when it is no page. */
  resolvePage(url: string): ResolvedPage | null {
    const host = this.hostIndexOf(url);
    if (host === null) return null;
    const parsed = new URL(url);
    const key = requestKey(parsed.pathname + parsed.search);
    const resource = key === null ? null : lookupResource(this.model, host, key);
    if (resource?.kind === 'page') return { host, contentHost: contentHost(this.model, host), page: resource.page, variant: null };
    if (resource?.kind === 'variant') return { host, contentHost: contentHost(this.model, host), page: resource.page, variant: resource.variant };
    return null;
  }

  private requirePage(url: string): ResolvedPage {
    const resolved = this.resolvePage(url);
    if (resolved === null) throw new TestWebError(TestWebErrorCode.Range, `not a page of this web: ${url}`);
    return resolved;
  }

  /** A page's version (number of changes so far) now or at `at`. Variants and mirrors follow their page. */
  pageVersion(url: string, at = this.clock()): number {
    return this.pageState(url, at).version;
  }

  /** A page's version, when it began (its Last-Modified and sitemap lastmod) and its ETag, now or at `at`. */
  pageState(url: string, at = this.clock()): PageVersion {
    const { contentHost: host, page } = this.requirePage(url);
    return this.changes.state(host, page, at);
  }

  /** How often a page changes on its own, in ms; null = never. */
  changeIntervalMs(url: string): number | null {
    const { contentHost: host, page } = this.requirePage(url);
    return this.changes.intervalMs(host, page);
  }

  /** The change class (`changes.classes`) a page was drawn into; null without classes. */
  changeClassOf(url: string): Required<ChangeClass> | null {
    const { contentHost: host, page } = this.requirePage(url);
    return this.changes.classOf(host, page);
  }

  /**
   * Changes a page's content now (on the web's clock): its version, ETag, Last-Modified and
   * sitemap lastmod move. Its variants and mirrored copies change with it.
   */
  touch(url: string): PageVersion {
    const { contentHost: host, page } = this.requirePage(url);
    return this.changes.touch(host, page, this.clock());
  }

  /** The sitemap URL a host's robots.txt announces, or null. */
  sitemapUrl(hostIndex: number): string | null {
    const path = hostIndex < this.model.hosts ? (this.sitemaps?.entryPath(hostIndex) ?? null) : null;
    return path === null ? null : `${this.originList[hostIndex]}${path}`;
  }

  /** Every URL of every planted duplicate cluster (see DuplicateInfo), keyed by URL. */
  duplicateTruth(): Map<string, DuplicateInfo> {
    return duplicateClusters(this.model, this.originOf);
  }

  /** Mirror host indexes (duplicates.mirrors), in order. */
  mirrorHosts(): number[] {
    return pageHosts(this.model).slice(this.model.hosts);
  }

  describe(): TestWebSummary {
    const { hosts, pagesPerHost, linksPerPage, crossHostLinks, noisyLinks, queryPages, seed } = this.model;
    const roots = this.rootUrls().slice(0, hosts);
    const mirrorRoots = this.mirrorHosts().map((host) => `${this.originList[host]}/`);
    return {
      hosts,
      extraHosts: this.addresses.length - hosts - mirrorRoots.length,
      pagesPerHost,
      totalPages: totalPages(this.model),
      linksPerPage,
      crossHostLinks,
      noisyLinks,
      queryPages,
      seed,
      port: this.boundPort,
      baseAddress: this.addresses[0] ?? '',
      origins: this.originList.slice(0, 3),
      lastOrigin: this.originList[this.originList.length - 1] ?? '',
      seeds: [...(crossHostLinks > 0 || hosts === 1 ? roots.slice(0, 1) : roots), ...mirrorRoots],
      pagesPerHostOverride: { ...this.model.pagesPerHostOverride },
      mirrorHosts: this.mirrorHosts(),
      profile: this.profile === null ? null : describeProfile(this.profile),
    };
  }

  /** Closes every listener and every open socket. Idempotent. */
  stop(): Promise<void> {
    this.stopped ??= (async () => {
      this.stopping.abort();
      await closeServers(this.servers);
    })();
    return this.stopped;
  }

  private checkPage(hostIndex: number, pageId: number): void {
    if (!(Number.isInteger(hostIndex) && servesPages(this.model, hostIndex)) ||
        !(Number.isInteger(pageId) && pageId >= 0 && pageId < pagesOf(this.model, hostIndex))) {
      throw new TestWebError(TestWebErrorCode.Range, `no page ${pageId} on host ${hostIndex}`);
    }
  }

  /** What the default web serves at a request key; extra hosts have only robots.txt. */
  private resourceOf(hostIndex: number, key: string): ServedResource | null {
    if (hostIndex < this.model.hosts) {
      const sitemap = this.sitemaps?.lookup(hostIndex, pagesOf(this.model, hostIndex), key) ?? null;
      if (sitemap !== null) return sitemap;
      if (key === SITE_SCRIPT_PATH && this.profile?.scripts === 'typical') return { kind: 'script' };
    }
    return lookupResource(this.model, hostIndex, key);
  }

  private createServer(hostIndex: number): http.Server {
    // Long enough for the poison pages' ~200 KB URL to reach the log instead of dying as a 431 in the parser.
    const server = http.createServer({ maxHeaderSize: 512 * 1024 }, (req, res) => this.onRequest(hostIndex, req, res));
    server.on('clientError', (_error, socket) => socket.destroy());
    return server;
  }

  private onRequest(hostIndex: number, req: http.IncomingMessage, res: http.ServerResponse): void {
    const startHr = hrNow();
    const key = requestKey(req.url ?? '');
    const resource = key === null ? null : this.resourceOf(hostIndex, key);
    const entry: RequestLogEntry = {
      host: this.hostKeys[hostIndex] ?? '',
      hostIndex,
      method: req.method ?? '',
      path: req.url ?? '',
      pageKey: resource === null ? null : key,
      start: Date.now(),
      startHr,
      end: -1,
      endHr: -1,
      status: 0,
      bytes: 0,
      userAgent: req.headers['user-agent'],
      conditional: req.headers['if-none-match'] !== undefined || req.headers['if-modified-since'] !== undefined,
      ...(resource === null ? {} : { resource: resource.kind satisfies ResourceKind }),
    };
    this.log.push(entry);
    this.inFlight++;
    if (req.method !== 'HEAD') countBodyBytes(res, entry);
    let finished = false;
    const finish = (aborted: boolean): void => {
      if (finished) return;
      finished = true;
      entry.end = Date.now();
      entry.endHr = hrNow();
      entry.status = res.headersSent ? res.statusCode : 0;
      if (aborted) entry.aborted = true;
      if (--this.inFlight === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
    };
    res.once('finish', () => finish(false));
    res.once('close', () => finish(true));
    void this.respond(hostIndex, req, res, entry, resource);
  }

  private async respond(
    hostIndex: number,
    req: http.IncomingMessage,
    res: http.ServerResponse,
    entry: RequestLogEntry,
    resource: ServedResource | null,
  ): Promise<void> {
    const delay = this.latency(hostIndex);
    if (delay > 0) await sleep(delay, this.stopping.signal);
    if (this.stopping.signal.aborted || res.destroyed) return;
    const serve = (): void => {
      // A streamed file ends on its own; if writing fails the connection goes.
      void serveDefault(this.site, hostIndex, req, res, resource, entry)?.catch(() => res.destroy());
    };
    const handler = this.handlers[hostIndex];
    if (handler === undefined) {
      serve();
      return;
    }
    try {
      await handler(req, res, {
        hostIndex,
        origin: this.originList[hostIndex] ?? '',
        pageKey: entry.pageKey,
        log: (extra) => Object.assign(entry, extra),
        serve,
        signal: this.stopping.signal,
      });
    } catch (error) {
      entry.note = `handler threw: ${describeError(error)}`;
      failResponse(req, res);
    }
  }
}

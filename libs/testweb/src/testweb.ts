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
import { TestWebError, TestWebErrorCode } from './errors.js';
import { closeServers, listenAll } from './listen.js';
import type { RequestLogEntry } from './log.js';
import type { Link, LinkAnchor, LinkNoise, PageRef, Resource, WebModel } from './model.js';
import { createWebModel, lookupResource, pagePath, pageSpec, reachablePages } from './model.js';
import type { HostHandler, TestWebOptions } from './options.js';
import { latencySource } from './options.js';
import type { OriginOf } from './render.js';
import { baseHref, hrefOf, renderPage } from './render.js';
import { requestKey } from './request-key.js';
import type { DefaultSite } from './respond.js';
import { countBodyBytes, DEFAULT_ROBOTS_TXT, failResponse, serveDefault } from './respond.js';

/** A link of a page as emitted, with the canonical URL it names. */
export interface RenderedLink {
  kind: Link['kind'];
  href: string;
  rel: string | null;
  /** Canonical URL of the target (page or nofollow page); null for mailto/javascript/tel. */
  url: string | null;
  /** Whether a correct crawler follows it (and groundTruth does). */
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
  /** Seeds that reach every page of the link table with scope 'any'. */
  seeds: string[];
}

const hrNow = (): number => performance.timeOrigin + performance.now();

export class TestWeb {
  /** Every request, in arrival order; entries are completed in place when responses finish. */
  readonly log: RequestLogEntry[] = [];
  readonly model: WebModel;
  private readonly addresses: string[];
  private readonly site: DefaultSite;
  private readonly handlers: Record<number, HostHandler>;
  private readonly latency: () => number;
  private readonly hostnames: string | undefined;
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
    this.model = createWebModel({
      hosts: options.hosts,
      pagesPerHost: options.pagesPerHost,
      linksPerPage: options.linksPerPage,
      crossHostLinks: options.crossHostLinks,
      seed: options.seed ?? 1,
      noisyLinks,
      queryPages: options.queryPages ?? noisyLinks,
    });
    const extraHosts = options.extraHosts ?? 0;
    if (!(Number.isSafeInteger(extraHosts) && extraHosts >= 0)) {
      throw new TestWebError(TestWebErrorCode.Options, `extraHosts must be an integer ≥ 0, got ${extraHosts}`);
    }
    this.addresses = hostAddresses(options.baseAddress ?? '127.1.0.1', options.hosts + extraHosts);
    const pageBytes = options.pageBytes ?? 2048;
    if (!(pageBytes >= 0 && Number.isFinite(pageBytes))) {
      throw new TestWebError(TestWebErrorCode.Options, `pageBytes must be ≥ 0, got ${pageBytes}`);
    }
    this.site = {
      model: this.model,
      pageBytes,
      robotsTxt: options.robotsTxt ?? (() => DEFAULT_ROBOTS_TXT),
      originOf: this.originOf,
    };
    this.handlers = options.hostHandlers ?? {};
    if (options.hostnames !== undefined && !/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(options.hostnames)) {
      throw new TestWebError(TestWebErrorCode.Options, `hostnames must be a lowercase DNS suffix such as "web.test", got ${JSON.stringify(options.hostnames)}`);
    }
    this.hostnames = options.hostnames;
    this.latency = latencySource(options.latencyMs, this.model.seed);
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
   * Canonical URLs of every page reachable from `seeds` by following links, restricted to hosts
   * allowed by `scope` ('any', or 'host' = only the seeds' hosts), and to pages `allow` accepts
   * (e.g. a robots.txt a test declared). Seeds that name no page of this web are ignored.
   */
  groundTruth(seeds: readonly string[], scope: 'any' | 'host' = 'any', options: { allow?: (url: string) => boolean } = {}): Set<string> {
    const result = new Set<string>();
    const refs: PageRef[] = [];
    for (const seed of seeds) {
      const host = this.hostIndexOf(seed);
      if (host === null || host >= this.model.hosts) continue;
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
    const pages = reachablePages(this.model, refs, hosts, allow && ((ref) => allow(this.pageUrl(ref.host, ref.page))));
    for (const ref of pages) result.add(this.pageUrl(ref.host, ref.page));
    return result;
  }

  /** The links of a page exactly as its HTML carries them, in order. */
  links(hostIndex: number, pageId: number): RenderedLink[] {
    this.checkPage(hostIndex, pageId);
    const spec = pageSpec(this.model, hostIndex, pageId);
    return spec.links.map((link) => ({
      kind: link.kind,
      href: hrefOf(this.model, spec, link, this.originOf),
      rel: link.kind === 'nofollow' ? link.rel : null,
      url:
        link.kind === 'page'
          ? this.pageUrl(link.target.host, link.target.page)
          : link.kind === 'nofollow'
            ? `${this.originList[hostIndex]}/nofollow/${link.id}`
            : null,
      follow: link.kind === 'page',
      anchor: link.kind === 'page' ? link.anchor : null,
      noise: link.kind === 'page' ? link.noise : null,
    }));
  }

  /** The page's `<base href>` value, or null. */
  baseHref(hostIndex: number, pageId: number): string | null {
    this.checkPage(hostIndex, pageId);
    return baseHref(pageSpec(this.model, hostIndex, pageId), this.originOf);
  }

  /** The HTML body the server sends for a page. */
  html(hostIndex: number, pageId: number): string {
    this.checkPage(hostIndex, pageId);
    return renderPage(this.model, hostIndex, pageId, this.originOf, this.site.pageBytes);
  }

  describe(): TestWebSummary {
    const { hosts, pagesPerHost, linksPerPage, crossHostLinks, noisyLinks, queryPages, seed } = this.model;
    const roots = this.rootUrls().slice(0, hosts);
    return {
      hosts,
      extraHosts: this.addresses.length - hosts,
      pagesPerHost,
      totalPages: hosts * pagesPerHost,
      linksPerPage,
      crossHostLinks,
      noisyLinks,
      queryPages,
      seed,
      port: this.boundPort,
      baseAddress: this.addresses[0] ?? '',
      origins: this.originList.slice(0, 3),
      lastOrigin: this.originList[this.originList.length - 1] ?? '',
      seeds: crossHostLinks > 0 || hosts === 1 ? roots.slice(0, 1) : roots,
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
    if (!(Number.isInteger(hostIndex) && hostIndex >= 0 && hostIndex < this.model.hosts) ||
        !(Number.isInteger(pageId) && pageId >= 0 && pageId < this.model.pagesPerHost)) {
      throw new TestWebError(TestWebErrorCode.Range, `no page ${pageId} on host ${hostIndex}`);
    }
  }

  /** What the default web serves at a request key; extra hosts have only robots.txt. */
  private resourceOf(hostIndex: number, key: string): Resource | null {
    if (hostIndex < this.model.hosts) return lookupResource(this.model, hostIndex, key);
    return key === '/robots.txt' ? { kind: 'robots' } : null;
  }

  private createServer(hostIndex: number): http.Server {
    const server = http.createServer((req, res) => this.onRequest(hostIndex, req, res));
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
    resource: Resource | null,
  ): Promise<void> {
    const delay = this.latency();
    if (delay > 0) await sleep(delay, this.stopping.signal);
    if (this.stopping.signal.aborted || res.destroyed) return;
    const serve = (): void => serveDefault(this.site, hostIndex, req, res, resource);
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

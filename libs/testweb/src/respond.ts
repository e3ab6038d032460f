/** The default responses of the synthetic web, and the byte counting every response gets. */
import type http from 'node:http';
import type { ChangeSchedule, PageVersion } from './changes.js';
import { httpDate, notModified } from './changes.js';
import { fileChunks, fileSize, FILE_TYPES } from './files.js';
import type { RequestLogEntry } from './log.js';
import type { Resource, VariantKind, WebModel } from './model.js';
import { contentHost, pagePath, pagesOf } from './model.js';
import type { PageCache } from './page-cache.js';
import type { PageProfile } from './profile.js';
import { renderRealisticPage, SITE_SCRIPT } from './realistic.js';
import type { OriginOf } from './render.js';
import { NOT_FOUND_BODY, renderNofollowPage, renderPage, renderVariant } from './render.js';
import { streamBody } from './stream.js';
import type { SitemapConfig, SitemapEntry, SitemapResource } from './sitemap.js';
import { gzipXml, renderAtom, renderRss, renderSitemapIndex, renderTextSitemap, renderUrlset } from './sitemap.js';

const HTML = 'text/html; charset=utf-8';
const TEXT = 'text/plain; charset=utf-8';
const XML = 'application/xml; charset=utf-8';

export const DEFAULT_ROBOTS_TXT = 'User-agent: *\nAllow: /\n';

/** A host's own behaviour script (realistic pages with `typical` scripts). */
export interface ScriptResource {
  kind: 'script';
}

/** Everything the default web can serve at a request key. */
export type ServedResource = Resource | SitemapResource | ScriptResource;

/** Counts body bytes as they are handed to the response, whoever writes them. */
export function countBodyBytes(res: http.ServerResponse, entry: RequestLogEntry): void {
  const count = (chunk: unknown, encoding: unknown): void => {
    if (typeof chunk === 'string') {
      entry.bytes += Buffer.byteLength(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
    } else if (chunk instanceof Uint8Array) {
      entry.bytes += chunk.byteLength;
    }
  };
  const write = res.write as (...args: unknown[]) => boolean;
  const end = res.end as (...args: unknown[]) => http.ServerResponse;
  res.write = function (this: http.ServerResponse, ...args: unknown[]) {
    count(args[0], args[1]);
    return write.apply(this, args);
  } as typeof res.write;
  res.end = function (this: http.ServerResponse, ...args: unknown[]) {
    if (typeof args[0] !== 'function') count(args[0], args[1]);
    return end.apply(this, args);
  } as typeof res.end;
}

export function send(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  status: number,
  type: string,
  body: string | Buffer,
  headers: http.OutgoingHttpHeaders = {},
): void {
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  res.writeHead(status, { ...headers, 'content-type': type, 'content-length': bytes.byteLength });
  if (req.method === 'HEAD') res.end();
  else res.end(bytes);
}

/** Everything the default responder needs to know about the web. */
export interface DefaultSite {
  model: WebModel;
  pageBytes: number;
  /** Words of prose per page, or null for padded pages. */
  proseWords: number | null;
  /** Realistic pages (size, prose, navigation, footer); null: the tiny padded or prose pages. */
  profile: PageProfile | null;
  robotsTxt: (hostIndex: number) => string | null;
  originOf: OriginOf;
  /** The web's clock: page versions, Last-Modified, Date and sitemap lastmod follow it. */
  now: () => number;
  changes: ChangeSchedule;
  /** Send ETag/Last-Modified on pages and answer conditional requests. */
  validators: boolean;
  sitemaps: SitemapConfig | null;
  /** Aborted when the web stops: ends file streams. */
  signal: AbortSignal;
  /** Rendered pages kept between requests (`pageCacheBytes`), or null: each request draws its page. */
  pageCache: PageCache | null;
}

const header = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value.join(', ') : value);

/** A print view or near copy is other bytes than its page: its ETag says so. */
function variantEtag(etag: string, variant: VariantKind | null): string {
  return variant === 'print' || variant === 'near' ? `${etag.slice(0, -1)}-${variant}"` : etag;
}

/** The HTML of a page at a version, as the site's profile draws it. */
export function pageBody(site: DefaultSite, hostIndex: number, page: number, version: number): string {
  if (site.profile !== null) return renderRealisticPage(site.model, hostIndex, page, site.originOf, site.profile, version);
  return renderPage(site.model, hostIndex, page, site.originOf, site.pageBytes, { version, proseWords: site.proseWords });
}

/** The bytes of a page at a version: kept ones when the web keeps pages, else drawn now. */
export function pageBytes(site: DefaultSite, hostIndex: number, page: number, version: number): Buffer | string {
  if (site.pageCache === null) return pageBody(site, hostIndex, page, version);
  return site.pageCache.get(`${hostIndex}:${page}:${version}`, () => pageBody(site, hostIndex, page, version));
}

/** A page or variant: validators, the conditional answer (304 without a body), or the body. */
function servePage(site: DefaultSite, hostIndex: number, req: http.IncomingMessage, res: http.ServerResponse, entry: RequestLogEntry, page: number, variant: VariantKind | null): void {
  const at = site.now();
  const state: PageVersion = site.changes.state(contentHost(site.model, hostIndex), page, at);
  entry.version = state.version;
  const headers: http.OutgoingHttpHeaders = { date: httpDate(at) };
  if (site.validators) {
    headers.etag = variantEtag(state.etag, variant);
    headers['last-modified'] = httpDate(state.changedAt);
    const unchanged = notModified(
      { ifNoneMatch: header(req.headers['if-none-match']), ifModifiedSince: header(req.headers['if-modified-since']) },
      headers.etag,
      state.changedAt,
    );
    if (entry.conditional) entry.notModified = unchanged;
    if (unchanged) {
      res.writeHead(304, headers);
      res.end();
      return;
    }
  }
  const body =
    variant === null
      ? pageBytes(site, hostIndex, page, state.version)
      : renderVariant(site.model, hostIndex, page, variant, site.originOf, site.proseWords ?? 0, state.version);
  send(req, res, 200, HTML, body, headers);
}

function serveFile(site: DefaultSite, hostIndex: number, req: http.IncomingMessage, res: http.ServerResponse, resource: Extract<Resource, { kind: 'file' }>): Promise<void> | void {
  const ref = { seed: site.model.seed, host: contentHost(site.model, hostIndex), page: resource.page, index: resource.index, kind: resource.file };
  res.writeHead(200, { 'content-type': FILE_TYPES[resource.file].contentType, 'content-length': fileSize(ref) });
  if (req.method === 'HEAD') {
    res.end();
    return;
  }
  return streamBody(res, site.signal, fileChunks(ref));
}

function robotsBody(site: DefaultSite, hostIndex: number): string | null {
  const body = site.robotsTxt(hostIndex);
  const path = hostIndex < site.model.hosts ? (site.sitemaps?.entryPath(hostIndex) ?? null) : null;
  if (body === null || path === null) return body;
  return `${body}${body === '' || body.endsWith('\n') ? '' : '\n'}Sitemap: ${site.originOf(hostIndex)}${path}\n`;
}

function pageEntries(site: DefaultSite, hostIndex: number, start: number, end: number, at: number): SitemapEntry[] {
  const origin = site.originOf(hostIndex);
  const entries: SitemapEntry[] = [];
  for (let page = start; page < end; page++) {
    entries.push({ loc: `${origin}${pagePath(site.model, hostIndex, page)}`, lastmod: site.changes.state(hostIndex, page, at).changedAt });
  }
  const foreign = site.sitemaps?.foreignHost ?? null;
  if (foreign !== null && foreign !== hostIndex && end === pagesOf(site.model, hostIndex)) {
    entries.push({ loc: `${site.originOf(foreign)}${pagePath(site.model, foreign, 0)}`, lastmod: at });
  }
  return entries;
}

function serveSitemap(site: DefaultSite, hostIndex: number, req: http.IncomingMessage, res: http.ServerResponse, resource: SitemapResource): void {
  const sitemaps = site.sitemaps as SitemapConfig;
  const at = site.now();
  const pages = pagesOf(site.model, hostIndex);
  const headers = { date: httpDate(at) };
  if (resource.part === 'urlset') {
    const entries = pageEntries(site, hostIndex, 0, pages, at);
    if (resource.format === 'text') send(req, res, 200, 'text/plain; charset=utf-8', renderTextSitemap(entries), headers);
    else if (resource.format === 'rss') send(req, res, 200, 'application/rss+xml', renderRss(entries), headers);
    else if (resource.format === 'atom') send(req, res, 200, 'application/atom+xml', renderAtom(entries), headers);
    else send(req, res, 200, XML, renderUrlset(entries), headers);
    return;
  }
  if (resource.part === 'index') {
    const origin = site.originOf(hostIndex);
    const children = Array.from({ length: sitemaps.childCount(pages) }, (_, i) => {
      const [start, end] = sitemaps.childRange(pages, i + 1);
      const lastmod = pageEntries(site, hostIndex, start, end, at).reduce((max, e) => Math.max(max, e.lastmod), 0);
      return { loc: `${origin}${sitemaps.childPath(pages, i + 1)}`, lastmod };
    });
    send(req, res, 200, XML, renderSitemapIndex(children), headers);
    return;
  }
  const [start, end] = sitemaps.childRange(pages, resource.part);
  const xml = renderUrlset(pageEntries(site, hostIndex, start, end, at));
  if (resource.gzip) send(req, res, 200, 'application/gzip', gzipXml(xml), headers);
  else send(req, res, 200, XML, xml, headers);
}

/** The synthetic web's own answer: a page, a variant, a file, a sitemap, a nofollow target, robots.txt, 404 or 405. */
export function serveDefault(
  site: DefaultSite,
  hostIndex: number,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  resource: ServedResource | null,
  entry: RequestLogEntry,
): Promise<void> | void {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.setHeader('allow', 'GET, HEAD');
    send(req, res, 405, TEXT, 'method not allowed\n');
    return;
  }
  if (resource === null) {
    send(req, res, 404, HTML, NOT_FOUND_BODY);
    return;
  }
  switch (resource.kind) {
    case 'robots': {
      const body = robotsBody(site, hostIndex);
      if (body === null) send(req, res, 404, TEXT, 'no robots.txt\n');
      else send(req, res, 200, TEXT, body);
      return;
    }
    case 'nofollow':
      send(req, res, 200, HTML, renderNofollowPage(hostIndex, resource.id));
      return;
    case 'page':
      servePage(site, hostIndex, req, res, entry, resource.page, null);
      return;
    case 'variant':
      servePage(site, hostIndex, req, res, entry, resource.page, resource.variant);
      return;
    case 'file':
      return serveFile(site, hostIndex, req, res, resource);
    case 'sitemap':
      serveSitemap(site, hostIndex, req, res, resource);
      return;
    case 'script':
      send(req, res, 200, 'text/javascript; charset=utf-8', SITE_SCRIPT, { 'cache-control': 'public, max-age=86400' });
      return;
  }
}

/** A handler failed: 500 if nothing was sent yet, otherwise cut the connection. */
export function failResponse(req: http.IncomingMessage, res: http.ServerResponse): void {
  if (!res.headersSent) send(req, res, 500, TEXT, 'handler failed\n');
  else res.destroy();
}

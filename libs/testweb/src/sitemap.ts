/**
 * Sitemaps (sitemaps.org protocol 0.9): `/sitemap.xml` listing every page of a host with its
 * last change as `<lastmod>`, or `/sitemap_index.xml` pointing at child sitemaps, the last one
 * gzip-compressed (`.xml.gz`, served as application/gzip). A host may publish its list in
 * another format sitemaps.org accepts instead: a text file (`/sitemap.txt`), an RSS 2.0 feed
 * (`/rss.xml`) or an Atom feed (`/atom.xml`). Announced by `Sitemap:` lines in robots.txt.
 * Rendered per request, so lastmod follows the changing web.
 */
import { gzipSync } from 'node:zlib';
import { TestWebError, TestWebErrorCode } from './errors.js';

export interface SitemapOptions {
  /** Link-table hosts that publish sitemaps; default every one. */
  hosts?: readonly number[];
  /** Hosts (or true = every sitemap host) publishing `/sitemap_index.xml` and children instead of `/sitemap.xml`; default none. */
  index?: boolean | readonly number[];
  /** Child sitemaps of an index (the last one gzip-compressed); default 3, at most the host's page count. */
  children?: number;
  /** Hosts publishing their (non-index) list as text, RSS or Atom rather than a urlset; default none. */
  formats?: Readonly<Record<number, SitemapFormat>>;
  /** A link-table host whose root page every other host's list also names (a URL its sitemap must not list); default none. */
  foreignHost?: number;
}

export type SitemapFormat = 'text' | 'rss' | 'atom';

const FORMAT_PATHS: Readonly<Record<SitemapFormat, string>> = { text: '/sitemap.txt', rss: '/rss.xml', atom: '/atom.xml' };

export type SitemapPart = 'urlset' | 'index' | number;

export interface SitemapResource {
  kind: 'sitemap';
  /** `urlset` = /sitemap.xml (or the host's format), `index` = /sitemap_index.xml, n = child n (1-based). */
  part: SitemapPart;
  gzip: boolean;
  /** The urlset's format, when the host publishes another than XML. */
  format?: SitemapFormat;
}

export interface SitemapEntry {
  loc: string;
  /** Epoch ms. */
  lastmod: number;
}

export class SitemapConfig {
  private readonly hosts: ReadonlySet<number> | null;
  private readonly indexHosts: ReadonlySet<number> | 'all';
  private readonly children: number;
  private readonly formats: ReadonlyMap<number, SitemapFormat>;
  /** See `SitemapOptions.foreignHost`. */
  readonly foreignHost: number | null;

  constructor(options: SitemapOptions, linkTableHosts: number) {
    const check = (name: string, hosts: readonly number[]): void => {
      for (const host of hosts) {
        if (!(Number.isSafeInteger(host) && host >= 0 && host < linkTableHosts)) {
          throw new TestWebError(TestWebErrorCode.Options, `${name}: ${host} is not a link-table host (0..${linkTableHosts - 1})`);
        }
      }
    };
    if (options.hosts !== undefined) check('sitemaps.hosts', options.hosts);
    if (Array.isArray(options.index)) check('sitemaps.index', options.index);
    this.formats = new Map(Object.entries(options.formats ?? {}).map(([host, format]) => [Number(host), format]));
    check('sitemaps.formats', [...this.formats.keys()]);
    this.foreignHost = options.foreignHost ?? null;
    if (this.foreignHost !== null) check('sitemaps.foreignHost', [this.foreignHost]);
    this.hosts = options.hosts === undefined ? null : new Set(options.hosts);
    this.indexHosts = options.index === true ? 'all' : new Set(Array.isArray(options.index) ? (options.index as readonly number[]) : []);
    this.children = options.children ?? 3;
    if (!(Number.isSafeInteger(this.children) && this.children >= 1)) {
      throw new TestWebError(TestWebErrorCode.Options, `sitemaps.children must be an integer ≥ 1, got ${this.children}`);
    }
  }

  publishes(host: number): boolean {
    return this.hosts === null || this.hosts.has(host);
  }

  usesIndex(host: number): boolean {
    return this.publishes(host) && (this.indexHosts === 'all' || this.indexHosts.has(host));
  }

  /** Child sitemaps of a host with `pages` pages. */
  childCount(pages: number): number {
    return Math.max(1, Math.min(this.children, pages));
  }

  /** The pages [start, end) child `part` (1-based) lists. */
  childRange(pages: number, part: number): [number, number] {
    const count = this.childCount(pages);
    return [Math.floor(((part - 1) * pages) / count), Math.floor((part * pages) / count)];
  }

  /** The path a robots.txt announces: `/sitemap.xml` or `/sitemap_index.xml`, null when the host has none. */
  entryPath(host: number): string | null {
    if (!this.publishes(host)) return null;
    if (this.usesIndex(host)) return '/sitemap_index.xml';
    const format = this.formats.get(host);
    return format === undefined ? '/sitemap.xml' : FORMAT_PATHS[format];
  }

  childPath(pages: number, part: number): string {
    return part === this.childCount(pages) ? `/sitemap-${part}.xml.gz` : `/sitemap-${part}.xml`;
  }

  /** What a request key names on a host with `pages` pages, or null. */
  lookup(host: number, pages: number, key: string): SitemapResource | null {
    if (!this.publishes(host)) return null;
    if (!this.usesIndex(host)) {
      const format = this.formats.get(host);
      if (key !== this.entryPath(host)) return null;
      return format === undefined ? { kind: 'sitemap', part: 'urlset', gzip: false } : { kind: 'sitemap', part: 'urlset', gzip: false, format };
    }
    if (key === '/sitemap_index.xml') return { kind: 'sitemap', part: 'index', gzip: false };
    const match = /^\/sitemap-([1-9]\d{0,3})\.xml(\.gz)?$/.exec(key);
    if (!match) return null;
    const part = Number(match[1]);
    return part <= this.childCount(pages) && this.childPath(pages, part) === key ? { kind: 'sitemap', part, gzip: match[2] !== undefined } : null;
  }
}

function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c] as string);
}

const HEADER = '<?xml version="1.0" encoding="UTF-8"?>\n';
const NS = 'http://www.sitemaps.org/schemas/sitemap/0.9';

const entryXml = (tag: 'url' | 'sitemap', entry: SitemapEntry): string =>
  `<${tag}><loc>${escapeXml(entry.loc)}</loc><lastmod>${new Date(entry.lastmod).toISOString()}</lastmod></${tag}>\n`;

export function renderUrlset(entries: Iterable<SitemapEntry>): string {
  let xml = `${HEADER}<urlset xmlns="${NS}">\n`;
  for (const entry of entries) xml += entryXml('url', entry);
  return `${xml}</urlset>\n`;
}

export function renderSitemapIndex(entries: Iterable<SitemapEntry>): string {
  let xml = `${HEADER}<sitemapindex xmlns="${NS}">\n`;
  for (const entry of entries) xml += entryXml('sitemap', entry);
  return `${xml}</sitemapindex>\n`;
}

/** A text sitemap: one URL a line. */
export function renderTextSitemap(entries: Iterable<SitemapEntry>): string {
  let text = '';
  for (const entry of entries) text += `${entry.loc}\n`;
  return text;
}

/** An RSS 2.0 feed: one item per page, its <link> and <pubDate> (RFC 822). */
export function renderRss(entries: Iterable<SitemapEntry>): string {
  let xml = `${HEADER}<rss version="2.0"><channel><title>pages</title>\n`;
  for (const entry of entries) xml += `<item><link>${escapeXml(entry.loc)}</link><pubDate>${new Date(entry.lastmod).toUTCString()}</pubDate></item>\n`;
  return `${xml}</channel></rss>\n`;
}

/** An Atom 1.0 feed: one entry per page, its <link href> and <updated>. */
export function renderAtom(entries: Iterable<SitemapEntry>): string {
  let xml = `${HEADER}<feed xmlns="http://www.w3.org/2005/Atom"><title>pages</title>\n`;
  for (const entry of entries) xml += `<entry><link href="${escapeXml(entry.loc)}"/><updated>${new Date(entry.lastmod).toISOString()}</updated></entry>\n`;
  return `${xml}</feed>\n`;
}

/** gzip with a zero mtime: the same XML gives the same bytes. */
export const gzipXml = (xml: string): Buffer => gzipSync(Buffer.from(xml, 'utf8'));

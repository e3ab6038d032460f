import { pipeline, Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import sax from 'sax';
import { parseRfc822Date, parseW3cDatetime } from './lastmod.js';

export type ChangeFreq = 'always' | 'hourly' | 'daily' | 'weekly' | 'monthly' | 'yearly' | 'never';

/** One <url> of a urlset, or one <sitemap> of an index (which has only loc and lastmod). */
export interface SitemapEntry {
  loc: string;
  /** Epoch ms; null when absent or invalid. */
  lastmod: number | null;
  changefreq?: ChangeFreq;
  /** 0.0–1.0. */
  priority?: number;
}

export interface SitemapResult {
  /**
   * urlset: pages (a sitemaps.org urlset, a text sitemap, or an RSS / Atom feed); index: child
   * sitemaps; unknown: not a sitemap (empty, or another root).
   */
  kind: 'urlset' | 'index' | 'unknown';
  entries: SitemapEntry[];
  /** A limit stopped the reading: the file holds more than `entries`. */
  truncated: boolean;
  /** What was wrong (bad XML, entries rejected, fields dropped, limits hit), first `maxErrors`. */
  errors: string[];
}

export interface SitemapLimits {
  /** Uncompressed bytes read at most (sitemaps.org: 50 MB, 52,428,800 bytes). */
  maxBytes: number;
  /** <url> entries per urlset file (sitemaps.org: 50,000). */
  maxEntries: number;
  /** <sitemap> entries per index file (sitemaps.org: 50,000). */
  maxSitemaps: number;
  /** Longer <loc> values reject their entry (sitemaps.org: under 2,048 characters). */
  maxLocLength: number;
  /** Error messages kept; the rest are counted in a last message. */
  maxErrors: number;
}

export const DEFAULT_SITEMAP_LIMITS: SitemapLimits = {
  maxBytes: 52_428_800,
  maxEntries: 50_000,
  maxSitemaps: 50_000,
  maxLocLength: 2_048,
  maxErrors: 100,
};

export type SitemapInput = Uint8Array | Readable | AsyncIterable<Uint8Array | string>;

const CHANGE_FREQS = new Set<string>(['always', 'hourly', 'daily', 'weekly', 'monthly', 'yearly', 'never']);
/**
 * Where a document's entries and their fields are, by its root element: a sitemaps.org urlset or
 * index (`<url>` / `<sitemap>` under the root), an RSS 2.0 feed (`<item>` in `<channel>`), an
 * RSS 1.0 (RDF) feed (`<item>` under the root) or an Atom feed (`<entry>` under the root; its
 * `<link href>` is read from the attribute). `fields` maps an element's local name to the field
 * it fills. sitemaps.org accepts RSS 2.0 and Atom 1.0 feeds as sitemaps; RSS 1.0 is read the same
 * way, as other crawlers do.
 */
interface Layout {
  kind: 'urlset' | 'index';
  /** The entry element's local name and depth (the root is depth 1). */
  entry: string;
  depth: number;
  fields: Readonly<Record<string, string>>;
  /** How <loc> is named in errors. */
  locName: string;
}

const SITEMAP_FIELDS = { loc: 'loc', lastmod: 'lastmod', changefreq: 'changefreq', priority: 'priority' };
const LAYOUTS: Readonly<Record<string, Layout>> = {
  urlset: { kind: 'urlset', entry: 'url', depth: 2, fields: SITEMAP_FIELDS, locName: '<loc>' },
  sitemapindex: { kind: 'index', entry: 'sitemap', depth: 2, fields: SITEMAP_FIELDS, locName: '<loc>' },
  rss: { kind: 'urlset', entry: 'item', depth: 3, fields: { link: 'loc', guid: 'guid', pubdate: 'pubdate' }, locName: '<link>' },
  rdf: { kind: 'urlset', entry: 'item', depth: 2, fields: { link: 'loc', date: 'lastmod' }, locName: '<link>' },
  feed: { kind: 'urlset', entry: 'entry', depth: 2, fields: { updated: 'lastmod', published: 'published' }, locName: '<link href>' },
};
/** Fields whose text may be a URL, so as long as a <loc>. */
const URL_FIELDS = new Set(['loc', 'guid']);
/** Text kept of a field other than <loc>: enough for any valid value. */
const MAX_FIELD_CHARS = 100;
/** A document this broken is not worth reading further. */
const MAX_XML_ERRORS = 1_000;

const quote = (text: string) => JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text);

/** What every reader keeps: its entries, whether it stopped (and why), its error messages. */
abstract class Reader {
  kind: SitemapResult['kind'] | null = null;
  readonly entries: SitemapEntry[] = [];
  truncated = false;
  stopped = false;
  private readonly errors: string[] = [];
  private dropped = 0;

  constructor(protected readonly limits: SitemapLimits) {}

  abstract write(text: string): void;
  abstract end(text: string): void;

  stop(reason: string, truncated: boolean): void {
    if (this.stopped) return;
    this.stopped = true;
    this.truncated = truncated;
    this.error(reason);
  }

  error(message: string): void {
    if (this.errors.length < this.limits.maxErrors) this.errors.push(message);
    else this.dropped++;
  }

  result(): SitemapResult {
    const errors = this.dropped > 0 ? [...this.errors, `… and ${this.dropped} more errors`] : [...this.errors];
    return { kind: this.kind ?? 'unknown', entries: this.entries, truncated: this.truncated, errors };
  }
}

/**
 * Builds entries from SAX events. Elements are matched by local name, in the entry's namespace
 * prefix (usually none), at their place in the tree (see `Layout`): root → url|sitemap → field.
 * So extension elements (<image:loc>, <xhtml:link>, <atom:link> in RSS, <news:…>) never pass for
 * the document's own. RSS 1.0's `<dc:date>` is the one field read in another prefix.
 */
class SitemapReader extends Reader {
  private layout: Layout | null = null;
  private entryPrefix = '';
  private xmlErrors = 0;
  private readonly parser = sax.parser(true, { position: true });
  private readonly stack: string[] = [];
  private rootPrefix = '';
  private full = false;
  private seen = 0;
  private entry: Map<string, string> | null = null;
  private field: string | null = null;
  private text = '';

  constructor(limits: SitemapLimits) {
    super(limits);
    this.parser.onopentag = (tag) => this.open(tag.name, tag.attributes as Record<string, string>);
    this.parser.onclosetag = () => this.close();
    this.parser.ontext = (text) => this.append(text);
    this.parser.oncdata = (text) => this.append(text);
    this.parser.onerror = (error) => {
      this.xmlErrors++;
      const [message = 'malformed XML'] = error.message.split('\n');
      this.error(`XML: ${message} (line ${this.parser.line + 1}, column ${this.parser.column + 1})`);
      if (this.xmlErrors >= MAX_XML_ERRORS) this.stop(`gave up after ${MAX_XML_ERRORS} XML errors`, false);
      this.parser.resume();
    };
  }

  write(text: string): void {
    if (!this.stopped && text.length > 0) this.parser.write(text);
  }

  end(text: string): void {
    this.write(text);
    if (this.stopped) return;
    this.parser.close();
    if (this.kind === null) this.error('not a sitemap: no root element');
  }

  private open(qualified: string, attributes: Record<string, string>): void {
    const colon = qualified.indexOf(':');
    const prefix = colon < 0 ? '' : qualified.slice(0, colon);
    const local = (colon < 0 ? qualified : qualified.slice(colon + 1)).toLowerCase();
    this.stack.push(local);
    if (this.stopped) return;
    const depth = this.stack.length;
    if (depth === 1) {
      this.rootPrefix = prefix;
      this.layout = LAYOUTS[local] ?? null;
      this.kind = this.layout?.kind ?? 'unknown';
      if (this.layout === null) this.stop(`not a sitemap: root element <${qualified}>`, false);
      return;
    }
    const layout = this.layout as Layout;
    if (depth === layout.depth && local === layout.entry && this.entry === null && this.inEntryParent(prefix)) {
      if (this.full) {
        const limit = this.kind === 'index' ? `maxSitemaps (${this.limits.maxSitemaps})` : `maxEntries (${this.limits.maxEntries})`;
        this.stop(`stopped at ${limit}: more entries follow`, true);
        return;
      }
      this.seen++;
      this.entry = new Map();
      this.entryPrefix = prefix;
    } else if (depth === layout.depth + 1 && this.entry !== null) {
      const dcDate = layout === LAYOUTS.rdf && prefix === 'dc' && local === 'date';
      if (prefix !== this.entryPrefix && !dcDate) return;
      if (layout === LAYOUTS.feed && local === 'link') {
        // Atom: the entry's first alternate link (a link without rel is one) is the page.
        const rel = (attributes.rel ?? 'alternate').trim().toLowerCase();
        const href = (attributes.href ?? '').trim();
        if (rel === 'alternate' && href !== '' && !this.entry.has('loc')) this.entry.set('loc', href.slice(0, this.limits.maxLocLength + 1));
        return;
      }
      const field = layout.fields[local];
      if (field !== undefined) {
        this.field = field;
        this.text = '';
      }
    }
  }

  /** An entry element stands in the root (or, in RSS 2.0, in the root's <channel>), in its prefix. */
  private inEntryParent(prefix: string): boolean {
    if (this.layout === LAYOUTS.rss) return this.stack[1] === 'channel' && prefix === this.rootPrefix;
    // RSS 1.0 puts the root in the rdf: prefix and its items in the RSS namespace.
    return this.layout === LAYOUTS.rdf || prefix === this.rootPrefix;
  }

  private append(text: string): void {
    if (this.field === null || this.stopped) return;
    // Keep one character past the limit, so an over-long value is still seen as such.
    const cap = (URL_FIELDS.has(this.field) ? this.limits.maxLocLength : MAX_FIELD_CHARS) + 1;
    if (this.text.length < cap) this.text += text.slice(0, cap - this.text.length);
  }

  private close(): void {
    const depth = this.stack.length;
    this.stack.pop();
    if (this.stopped) return;
    const entryDepth = this.layout?.depth ?? 2;
    if (depth === entryDepth + 1 && this.field !== null) {
      this.entry?.set(this.field, this.text.trim());
      this.field = null;
    } else if (depth === entryDepth && this.entry !== null) {
      this.finish(this.entry);
      this.entry = null;
    }
  }

  /** Validates one entry: a bad <loc> rejects it, a bad optional field is dropped from it. */
  private finish(fields: Map<string, string>): void {
    const layout = this.layout as Layout;
    let loc = fields.get('loc') ?? '';
    // RSS: an item without <link> is still a page when its <guid> is a URL.
    const guid = fields.get('guid') ?? '';
    if (loc === '' && /^https?:\/\//i.test(guid)) loc = guid;
    const where = `entry ${this.seen}${loc ? ` (${quote(loc)})` : ''}`;
    if (loc === '') return this.error(`${where}: no ${layout.locName}`);
    if (loc.length > this.limits.maxLocLength) return this.error(`${where}: ${layout.locName} longer than ${this.limits.maxLocLength} characters`);
    const problem = locProblem(loc);
    if (problem !== null) return this.error(`${where}: ${layout.locName} ${problem}`);

    const entry: SitemapEntry = { loc, lastmod: null };
    const pubDate = fields.get('pubdate');
    const lastmod = pubDate ?? fields.get('lastmod') ?? fields.get('published');
    if (lastmod !== undefined && lastmod !== '') {
      entry.lastmod = pubDate !== undefined ? parseRfc822Date(lastmod) : parseW3cDatetime(lastmod);
      if (entry.lastmod === null) this.error(`${where}: invalid ${pubDate !== undefined ? '<pubDate>' : '<lastmod>'} ${quote(lastmod)}`);
    }
    if (this.kind === 'urlset') {
      const changefreq = fields.get('changefreq')?.toLowerCase();
      if (changefreq !== undefined && changefreq !== '') {
        if (CHANGE_FREQS.has(changefreq)) entry.changefreq = changefreq as ChangeFreq;
        else this.error(`${where}: invalid <changefreq> ${quote(changefreq)}`);
      }
      const priority = fields.get('priority');
      if (priority !== undefined && priority !== '') {
        const value = /^(\d+(\.\d*)?|\.\d+)$/.test(priority) ? Number(priority) : Number.NaN;
        if (value >= 0 && value <= 1) entry.priority = value;
        else this.error(`${where}: invalid <priority> ${quote(priority)}`);
      }
    }
    this.entries.push(entry);
    if (this.entries.length >= (this.kind === 'index' ? this.limits.maxSitemaps : this.limits.maxEntries)) this.full = true;
  }
}

/** Why `loc` is no page URL (not absolute, not http(s)), or null. */
function locProblem(loc: string): string | null {
  let url: URL;
  try {
    url = new URL(loc);
  } catch {
    return 'is not an absolute URL';
  }
  return url.protocol === 'http:' || url.protocol === 'https:' ? null : 'is not http(s)';
}

/** Unusable lines after which a text file with no URL yet is taken for something else. */
const MAX_BAD_LINES = 1_000;

/**
 * A text sitemap (sitemaps.org: one absolute URL per line, UTF-8, at most 50,000 URLs and 50 MB):
 * blank lines skipped, any other line that is not an http(s) URL reported and skipped.
 */
class TextReader extends Reader {
  private bad = 0;
  private line = 0;
  private rest = '';

  write(text: string): void {
    if (this.stopped || text.length === 0) return;
    const lines = (this.rest + text).split(/\r\n|\r|\n/);
    // A chunk may end inside a line (or between \r and \n): keep that part for the next one.
    this.rest = lines.pop() ?? '';
    if (this.rest.length > this.limits.maxLocLength + 1) this.rest = this.rest.slice(0, this.limits.maxLocLength + 1);
    for (const line of lines) {
      if (this.stopped) return;
      this.take(line);
    }
  }

  end(text: string): void {
    this.write(text);
    if (this.stopped) return;
    this.take(this.rest);
    this.rest = '';
    if (this.entries.length === 0) this.error('not a sitemap: no URL lines');
  }

  override result(): SitemapResult {
    this.kind = this.entries.length > 0 ? 'urlset' : 'unknown';
    return super.result();
  }

  private take(raw: string): void {
    this.line++;
    const loc = raw.trim();
    if (loc === '') return;
    if (this.entries.length >= this.limits.maxEntries) return this.stop(`stopped at maxEntries (${this.limits.maxEntries}): more entries follow`, true);
    const where = `line ${this.line} (${quote(loc)})`;
    const problem = loc.length > this.limits.maxLocLength ? `longer than ${this.limits.maxLocLength} characters` : locProblem(loc);
    if (problem === null) {
      this.entries.push({ loc, lastmod: null });
      return;
    }
    this.error(`${where}: ${problem}`);
    if (++this.bad >= MAX_BAD_LINES && this.entries.length === 0) this.stop(`gave up after ${MAX_BAD_LINES} lines that are no URLs`, false);
  }
}


async function* chunksOf(input: SitemapInput): AsyncGenerator<Buffer> {
  if (input instanceof Uint8Array) {
    yield Buffer.from(input.buffer, input.byteOffset, input.byteLength);
    return;
  }
  for await (const chunk of input as AsyncIterable<Uint8Array | string>) yield typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk);
}

/** The input's bytes, gunzipped when they start with the gzip magic (1f 8b), whatever the name says. */
async function* uncompressed(input: SitemapInput): AsyncGenerator<Buffer> {
  const source = chunksOf(input);
  let head = Buffer.alloc(0);
  while (head.length < 2) {
    const next = await source.next();
    if (next.done) break;
    head = Buffer.concat([head, next.value]);
  }
  async function* all(): AsyncGenerator<Buffer> {
    if (head.length > 0) yield head;
    yield* source;
  }
  if (head[0] !== 0x1f || head[1] !== 0x8b) {
    yield* all();
    return;
  }
  // Streamed, so a decompression bomb costs at most the caller's byte limit: reading stops
  // there and the streams are destroyed.
  const gunzip = pipeline(Readable.from(all()), createGunzip(), () => undefined);
  for await (const chunk of gunzip) yield chunk as Buffer;
}

/**
 * Reads a sitemap (sitemaps.org protocol: a urlset or sitemap index in XML, a text file of URLs,
 * or an RSS / Atom feed) from bytes or a stream, gzipped or not, never holding more than one chunk
 * of input. The first character after white space tells XML (`<`) from text, whatever the name or
 * the Content-Type says. Stops at the limits, keeping what was read (`truncated`); bad XML, bad
 * entries and bad fields are reported in `errors`, never thrown. Text is read as UTF-8, the only
 * encoding the protocol allows. A stream is consumed (and destroyed when reading stops early).
 */
export async function parseSitemap(input: SitemapInput, limits: Partial<SitemapLimits> = {}): Promise<SitemapResult> {
  const bounds = { ...DEFAULT_SITEMAP_LIMITS, ...limits };
  const decoder = new TextDecoder('utf-8');
  const state: { reader: Reader | null; head: string } = { reader: null, head: '' };
  const readerFor = (): Reader => (state.reader ??= new SitemapReader(bounds));
  /** Text goes to the reader its first non-blank character chose; blank text waits for one. */
  const feed = (text: string): void => {
    if (state.reader === null) {
      state.head += text;
      const first = /\S/.exec(state.head);
      if (first === null) return;
      state.reader = first[0] === '<' ? new SitemapReader(bounds) : new TextReader(bounds);
      text = state.head;
      state.head = '';
    }
    state.reader.write(text);
  };
  let bytes = 0;
  try {
    for await (const chunk of uncompressed(input)) {
      const room = bounds.maxBytes - bytes;
      if (chunk.length > room) {
        feed(decoder.decode(chunk.subarray(0, room), { stream: true }));
        readerFor().stop(`stopped at maxBytes (${bounds.maxBytes} bytes uncompressed): the file is longer`, true);
        break;
      }
      bytes += chunk.length;
      feed(decoder.decode(chunk, { stream: true }));
      if (state.reader?.stopped) break;
    }
    feed(decoder.decode());
    readerFor().end('');
  } catch (error) {
    readerFor().stop(`could not read the input: ${error instanceof Error ? error.message : String(error)}`, false);
  }
  return readerFor().result();
}

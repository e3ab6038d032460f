import { pipeline, Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import sax from 'sax';
import { parseW3cDatetime } from './lastmod.js';

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
  /** urlset: pages; index: child sitemaps; unknown: not a sitemap (empty, or another root). */
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
const FIELDS = new Set(['loc', 'lastmod', 'changefreq', 'priority']);
/** Text kept of a field other than <loc>: enough for any valid value. */
const MAX_FIELD_CHARS = 100;
/** A document this broken is not worth reading further. */
const MAX_XML_ERRORS = 1_000;

const quote = (text: string) => JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text);

/**
 * Builds entries from SAX events. Elements are matched by local name, in the root's namespace
 * prefix (usually none), at their place in the tree: root → url|sitemap → field. So extension
 * elements (<image:loc>, <xhtml:link>, <news:…>) never pass for the sitemap's own.
 */
class SitemapReader {
  kind: SitemapResult['kind'] | null = null;
  readonly entries: SitemapEntry[] = [];
  truncated = false;
  stopped = false;
  private readonly errors: string[] = [];
  private dropped = 0;
  private xmlErrors = 0;
  private readonly parser = sax.parser(true, { position: true });
  private readonly stack: string[] = [];
  private rootPrefix = '';
  private full = false;
  private seen = 0;
  private entry: Map<string, string> | null = null;
  private field: string | null = null;
  private text = '';

  constructor(private readonly limits: SitemapLimits) {
    this.parser.onopentag = (tag) => this.open(tag.name);
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

  private open(qualified: string): void {
    const colon = qualified.indexOf(':');
    const prefix = colon < 0 ? '' : qualified.slice(0, colon);
    const local = (colon < 0 ? qualified : qualified.slice(colon + 1)).toLowerCase();
    this.stack.push(local);
    if (this.stopped) return;
    const depth = this.stack.length;
    if (depth === 1) {
      this.rootPrefix = prefix;
      this.kind = local === 'urlset' ? 'urlset' : local === 'sitemapindex' ? 'index' : 'unknown';
      if (this.kind === 'unknown') this.stop(`not a sitemap: root element <${qualified}>`, false);
      return;
    }
    if (prefix !== this.rootPrefix) return;
    if (depth === 2 && local === (this.kind === 'index' ? 'sitemap' : 'url')) {
      if (this.full) {
        const limit = this.kind === 'index' ? `maxSitemaps (${this.limits.maxSitemaps})` : `maxEntries (${this.limits.maxEntries})`;
        this.stop(`stopped at ${limit}: more entries follow`, true);
        return;
      }
      this.seen++;
      this.entry = new Map();
    } else if (depth === 3 && this.entry !== null && FIELDS.has(local)) {
      this.field = local;
      this.text = '';
    }
  }

  private append(text: string): void {
    if (this.field === null || this.stopped) return;
    // Keep one character past the limit, so an over-long value is still seen as such.
    const cap = (this.field === 'loc' ? this.limits.maxLocLength : MAX_FIELD_CHARS) + 1;
    if (this.text.length < cap) this.text += text.slice(0, cap - this.text.length);
  }

  private close(): void {
    const depth = this.stack.length;
    this.stack.pop();
    if (this.stopped) return;
    if (depth === 3 && this.field !== null) {
      this.entry?.set(this.field, this.text.trim());
      this.field = null;
    } else if (depth === 2 && this.entry !== null) {
      this.finish(this.entry);
      this.entry = null;
    }
  }

  /** Validates one entry: a bad <loc> rejects it, a bad optional field is dropped from it. */
  private finish(fields: Map<string, string>): void {
    const loc = fields.get('loc') ?? '';
    const where = `entry ${this.seen}${loc ? ` (${quote(loc)})` : ''}`;
    if (loc === '') return this.error(`${where}: no <loc>`);
    if (loc.length > this.limits.maxLocLength) return this.error(`${where}: <loc> longer than ${this.limits.maxLocLength} characters`);
    let url: URL;
    try {
      url = new URL(loc);
    } catch {
      return this.error(`${where}: <loc> is not an absolute URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return this.error(`${where}: <loc> is not http(s)`);

    const entry: SitemapEntry = { loc, lastmod: null };
    const lastmod = fields.get('lastmod');
    if (lastmod !== undefined && lastmod !== '') {
      entry.lastmod = parseW3cDatetime(lastmod);
      if (entry.lastmod === null) this.error(`${where}: invalid <lastmod> ${quote(lastmod)}`);
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
 * Reads a sitemap or sitemap index (sitemaps.org protocol) from bytes or a stream, gzipped or
 * not, never holding more than one chunk of input. Stops at the limits, keeping what was read
 * (`truncated`); bad XML, bad entries and bad fields are reported in `errors`, never thrown.
 * Text is read as UTF-8, the only encoding the protocol allows. A stream is consumed (and
 * destroyed when reading stops early).
 */
export async function parseSitemap(input: SitemapInput, limits: Partial<SitemapLimits> = {}): Promise<SitemapResult> {
  const bounds = { ...DEFAULT_SITEMAP_LIMITS, ...limits };
  const reader = new SitemapReader(bounds);
  const decoder = new TextDecoder('utf-8');
  let bytes = 0;
  try {
    for await (const chunk of uncompressed(input)) {
      const room = bounds.maxBytes - bytes;
      if (chunk.length > room) {
        reader.write(decoder.decode(chunk.subarray(0, room), { stream: true }));
        reader.stop(`stopped at maxBytes (${bounds.maxBytes} bytes uncompressed): the file is longer`, true);
        break;
      }
      bytes += chunk.length;
      reader.write(decoder.decode(chunk, { stream: true }));
      if (reader.stopped) break;
    }
    reader.end(decoder.decode());
  } catch (error) {
    reader.stop(`could not read the input: ${error instanceof Error ? error.message : String(error)}`, false);
  }
  return reader.result();
}

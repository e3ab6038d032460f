import { createHash } from 'node:crypto';
import { type FileHandle, mkdir, open, rename, writeFile } from 'node:fs/promises';
import { hostname as osHostname } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gzip, gzipSync } from 'node:zlib';
import type * as Warcio from 'warcio';
import type { WARCRecord } from 'warcio';
import { base32, headerPairs, type HttpExchange, type HttpHeaders, payloadDigest, recordedResponseHeaders, statusLine, warcDate } from './records.js';

/**
 * warcio, loaded when a writer first writes: WARC writing is off by default, and loading it costs
 * ~75 ms of CPU in every thread that imports this package (the process stage's, for one).
 */
let warcioModule: typeof Warcio | null = null;
async function loadWarcio(): Promise<void> {
  warcioModule ??= await import('warcio');
}
function warcio(): typeof Warcio {
  if (warcioModule === null) throw new Error('warcio is not loaded yet (every write loads it first)');
  return warcioModule;
}

export const DEFAULT_MAX_FILE_BYTES = 1_000_000_000;
/**
 * Records are serialized by warcio uncompressed, with their digests (SHA-1 in base32, what WARC
 * tools and CDX indexes have always used) already set from node:crypto, and each gzipped by
 * node:zlib as one member. warcio's own way — a wasm hasher instantiated per digest and a web
 * CompressionStream per record — cost ~4 ms of CPU per 2 KB page.
 */
const SERIALIZE = { gzip: false, digest: { algo: 'sha-1', prefix: 'sha1:', base32: true } } as const;
/** Records up to this size are compressed inline (less CPU than the thread hand-off); larger ones on the thread pool. */
const INLINE_GZIP_MAX_BYTES = 64 * 1024;
const gzipAsync = promisify(gzip);
const EMPTY = new Uint8Array(0);

export interface WarcWriterOptions {
  dir: string;
  /** First part of file names (TRAWL_WARC_PREFIX). Default 'trawl'. */
  prefix?: string;
  /** A file is finished once it reaches this many bytes; records are never split. Default 1 GB. */
  maxFileBytes?: number;
  /** For file names and warcinfo. Default: this machine's hostname. */
  hostname?: string;
  pid?: number;
  /** Clock for file names and warcinfo dates, epoch ms. */
  now?: () => number;
  /** Extra warcinfo fields (operator, description, isPartOf, robots, …). */
  warcinfo?: Record<string, string>;
  /** The warcinfo `software` field. */
  software?: string;
}

/** Where one record landed: enough to read it back (and what its CDXJ line says). */
export interface WrittenRecord {
  type: 'response' | 'request' | 'revisit' | 'metadata' | 'conversion';
  recordId: string;
  url: string;
  /** The file's final name (it is written as `<name>.open` until finished). */
  filename: string;
  offset: number;
  /** Bytes of the gzip member holding the record. */
  length: number;
  /** WARC-Payload-Digest (`sha1:<base32>`), for responses and revisits. */
  payloadDigest: string | null;
  date: string;
}

export interface RevisitInput {
  url: string;
  fetchedAt: number | Date;
  ip?: string | null;
  /** The capture whose payload this one repeats (WARC-Refers-To-Target-URI / -Date / WARC-Refers-To). */
  refersTo: { url: string; date: number | Date | string; recordId?: string };
  /** The repeated payload's digest, `sha1:<base32>` (payloadDigest() of its bytes). */
  payloadDigest: string;
  /** The response's status line and headers (a 304, or the 200 that repeated a known body). */
  response: { status: number; statusText?: string; headers: HttpHeaders; httpVersion?: string };
  request?: HttpExchange['request'];
}

export interface MetadataInput {
  url: string;
  date: number | Date;
  /** `application/warc-fields` lines. */
  fields: Record<string, string> | readonly (readonly [string, string])[];
  /** The record this one describes (WARC-Concurrent-To). */
  concurrentTo?: string;
}

export interface ConversionInput {
  url: string;
  date: number | Date;
  /** The converted form's media type, e.g. `text/html; charset=utf-8`. */
  contentType: string;
  body: Uint8Array;
  /** The record of the original capture (WARC-Refers-To). */
  refersTo?: string;
}

interface OpenFile {
  name: string;
  path: string;
  handle: FileHandle;
  size: number;
  cdx: string[];
}

/**
 * Writes WARC/1.1 files with warcio: one gzip member per record, a `warcinfo` record at the head
 * of each file, files rolled by size and named `<prefix>-<yyyyMMddHHmmssSSS>-<serial>-<host>-<pid>.warc.gz`,
 * each written as `<name>.open` and renamed when finished, with a CDXJ index beside it
 * (`<prefix>-…-<pid>.cdxj`: one line per response or revisit, sorted, in the format pywb and
 * warcio's `cdx-index` produce). Calls are serialized; one writer owns its files.
 */
export class WarcWriter {
  private readonly dir: string;
  private readonly prefix: string;
  private readonly maxFileBytes: number;
  private readonly host: string;
  private readonly pid: number;
  private readonly now: () => number;
  private readonly info: Record<string, string>;
  private current: OpenFile | null = null;
  private serial = 0;
  private tail: Promise<unknown> = Promise.resolve();
  private closed = false;
  private readonly finished: string[] = [];

  constructor(options: WarcWriterOptions) {
    this.dir = options.dir;
    this.prefix = options.prefix ?? 'trawl';
    this.maxFileBytes = options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(this.prefix)) throw new RangeError(`WARC prefix must be letters, digits, _ and -: ${this.prefix}`);
    if (!Number.isInteger(this.maxFileBytes) || this.maxFileBytes < 1) throw new RangeError(`maxFileBytes must be a positive integer`);
    this.host = (options.hostname ?? osHostname()).replace(/[^A-Za-z0-9.-]+/g, '-') || 'localhost';
    this.pid = options.pid ?? process.pid;
    this.now = options.now ?? Date.now;
    this.info = {
      software: options.software ?? 'trawl (warcio.js 2.4.11)',
      format: 'WARC File Format 1.1',
      conformsTo: 'https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/',
      hostname: this.host,
      ...options.warcinfo,
    };
  }

  /** Finished WARC files so far (full paths). */
  get files(): readonly string[] {
    return this.finished;
  }

  /** A response record (and a request record concurrent to it, when the exchange has one). */
  writeExchange(exchange: HttpExchange): Promise<{ response: WrittenRecord; request: WrittenRecord | null }> {
    return this.serialized(async () => {
      const date = warcDate(exchange.fetchedAt);
      const { response } = exchange;
      const warcHeaders: [string, string][] = [];
      if (exchange.ip) warcHeaders.push(['WARC-IP-Address', exchange.ip]);
      if (response.truncated) warcHeaders.push(['WARC-Truncated', 'length']);
      const record = warcio().WARCRecord.create(
        {
          url: exchange.url,
          date,
          type: 'response',
          warcVersion: warcio().WARC_1_1,
          warcHeaders,
          statusline: statusLine(response.status, response.statusText, response.httpVersion),
          httpHeaders: recordedResponseHeaders(response.headers, response.body, response.bodyForm),
        },
        [response.body],
      );
      const written = await this.append(record, 'response', response.body);
      const request = exchange.request ? await this.append(this.requestRecord(exchange.url, date, exchange.request, written.recordId), 'request') : null;
      await this.rollIfFull();
      return { response: written, request };
    });
  }

  /**
   * A revisit record, profile `http://netpreserve.org/warc/1.1/revisit/identical-payload-digest`
   * (warcio sets it for WARC/1.1): a 304, an unchanged re-crawl, an exact duplicate.
   */
  writeRevisit(input: RevisitInput): Promise<{ revisit: WrittenRecord; request: WrittenRecord | null }> {
    return this.serialized(async () => {
      const date = warcDate(input.fetchedAt);
      const warcHeaders: [string, string][] = [['WARC-Payload-Digest', input.payloadDigest]];
      if (input.refersTo.recordId) warcHeaders.push(['WARC-Refers-To', input.refersTo.recordId]);
      if (input.ip) warcHeaders.push(['WARC-IP-Address', input.ip]);
      const refersToDate = typeof input.refersTo.date === 'string' ? input.refersTo.date : warcDate(input.refersTo.date);
      const record = warcio().WARCRecord.create({
        url: input.url,
        date,
        type: 'revisit',
        warcVersion: warcio().WARC_1_1,
        warcHeaders,
        refersToUrl: input.refersTo.url,
        refersToDate,
        statusline: statusLine(input.response.status, input.response.statusText, input.response.httpVersion),
        // The block is the response's headers alone: the payload is the one referred to.
        httpHeaders: headerPairs(input.response.headers),
      });
      const revisit = await this.append(record, 'revisit');
      const request = input.request ? await this.append(this.requestRecord(input.url, date, input.request, revisit.recordId), 'request') : null;
      await this.rollIfFull();
      return { revisit, request };
    });
  }

  /** A metadata record of `application/warc-fields` (e.g. a near-duplicate's cluster). */
  writeMetadata(input: MetadataInput): Promise<WrittenRecord> {
    return this.serialized(async () => {
      const warcHeaders: [string, string][] = [['Content-Type', 'application/warc-fields']];
      if (input.concurrentTo) warcHeaders.push(['WARC-Concurrent-To', input.concurrentTo]);
      const lines = Buffer.from(headerPairs(input.fields).map(([name, value]) => `${name}: ${value}\r\n`).join(''), 'utf8');
      return this.appendBlock('metadata', input, warcHeaders, lines);
    });
  }

  /**
   * A `conversion` record: another form of a captured resource (a page's DOM as a headless
   * browser rendered it), referring to the original's record.
   */
  writeConversion(input: ConversionInput): Promise<WrittenRecord> {
    return this.serialized(async () => {
      const warcHeaders: [string, string][] = [['Content-Type', input.contentType]];
      if (input.refersTo) warcHeaders.push(['WARC-Refers-To', input.refersTo]);
      return this.appendBlock('conversion', input, warcHeaders, input.body);
    });
  }

  /** A record whose block is `payload` as is (no HTTP headers), then the file rolled if full. */
  private async appendBlock(type: 'metadata' | 'conversion', at: { url: string; date: number | Date }, warcHeaders: [string, string][], payload: Uint8Array): Promise<WrittenRecord> {
    const record = warcio().WARCRecord.create({ url: at.url, date: warcDate(at.date), type, warcVersion: warcio().WARC_1_1, warcHeaders }, [payload]);
    const written = await this.append(record, type, payload);
    await this.rollIfFull();
    return written;
  }

  /** Finishes the open file (renamed from `.open`, CDXJ written); returns every finished file. */
  close(): Promise<readonly string[]> {
    return this.serialized(async () => {
      this.closed = true;
      await this.finish();
      return this.finished;
    }, true);
  }

  private requestRecord(url: string, date: string, request: NonNullable<HttpExchange['request']>, concurrentTo: string): WARCRecord {
    const target = new URL(url);
    return warcio().WARCRecord.create({
      url,
      date,
      type: 'request',
      warcVersion: warcio().WARC_1_1,
      warcHeaders: [['WARC-Concurrent-To', concurrentTo]],
      statusline: `${request.method} ${target.pathname}${target.search} HTTP/${request.httpVersion ?? '1.1'}`,
      httpHeaders: headerPairs(request.headers),
    });
  }

  private serialized<T>(work: () => Promise<T>, allowClosed = false): Promise<T> {
    if (this.closed && !allowClosed) return Promise.reject(new Error('WARC writer is closed'));
    const next = this.tail.then(async () => {
      await loadWarcio();
      return work();
    });
    this.tail = next.catch(() => undefined);
    return next;
  }

  private async append(record: WARCRecord, type: WrittenRecord['type'], payload: Uint8Array = EMPTY): Promise<WrittenRecord> {
    const file = this.current ?? (await this.openFile());
    const bytes = await serialize(record, payload);
    const offset = file.size;
    await file.handle.write(bytes, 0, bytes.length, offset);
    file.size += bytes.length;
    const written: WrittenRecord = {
      type,
      recordId: record.warcHeaders.headers.get('WARC-Record-ID') ?? '',
      url: record.warcTargetURI ?? '',
      filename: file.name,
      offset,
      length: bytes.length,
      payloadDigest: record.warcPayloadDigest ?? null,
      date: record.warcDate ?? '',
    };
    if (type === 'response' || type === 'revisit') file.cdx.push(cdxjLine(record, written));
    return written;
  }

  private async openFile(): Promise<OpenFile> {
    await mkdir(this.dir, { recursive: true });
    const now = this.now();
    const stamp = new Date(now).toISOString().replace(/[-:TZ.]/g, '');
    const name = `${this.prefix}-${stamp}-${String(this.serial).padStart(5, '0')}-${this.host}-${this.pid}.warc.gz`;
    this.serial += 1;
    const path = join(this.dir, name);
    const handle = await open(`${path}.open`, 'wx');
    const file: OpenFile = { name, path, handle, size: 0, cdx: [] };
    this.current = file;
    const info = warcio().WARCRecord.createWARCInfo({ filename: name, warcVersion: warcio().WARC_1_1, date: warcDate(now) }, this.info);
    const bytes = await serialize(info, EMPTY);
    await handle.write(bytes, 0, bytes.length, 0);
    file.size = bytes.length;
    return file;
  }

  private async rollIfFull(): Promise<void> {
    if (this.current !== null && this.current.size >= this.maxFileBytes) await this.finish();
  }

  private async finish(): Promise<void> {
    const file = this.current;
    if (file === null) return;
    this.current = null;
    await file.handle.close();
    await rename(`${file.path}.open`, file.path);
    // Byte order (LC_ALL=C sort), as CDXJ binary search expects.
    const lines = file.cdx.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    await writeFile(cdxjPath(file.path), lines.join(''));
    this.finished.push(file.path);
  }
}

/**
 * One record as a gzip member. `payload` is the record's payload, as given to WARCRecord.create
 * (its block is the HTTP headers, as warcio writes them, then the payload): its digests are set
 * here, so warcio computes none.
 */
async function serialize(record: WARCRecord, payload: Uint8Array): Promise<Uint8Array> {
  if (record.warcType !== 'warcinfo') {
    const headers = record.httpHeaders ? Buffer.from(`${record.httpHeaders.toString()}\r\n`, 'utf8') : EMPTY;
    record.warcHeaders.headers.set('WARC-Block-Digest', `sha1:${base32(createHash('sha1').update(headers).update(payload).digest())}`);
    if (record.warcType !== 'revisit') record.warcHeaders.headers.set('WARC-Payload-Digest', payloadDigest(payload));
  }
  const raw = await warcio().WARCSerializer.serialize(record, SERIALIZE);
  return raw.length <= INLINE_GZIP_MAX_BYTES ? gzipSync(raw) : gzipAsync(raw);
}

/** The CDXJ index beside a WARC file: `x.warc.gz` → `x.cdxj`. */
export function cdxjPath(warcPath: string): string {
  return warcPath.replace(/\.warc(\.gz)?$/, '') + '.cdxj';
}

/** `<SURT> <14-digit timestamp> {url, mime, status, digest, length, offset, filename}` as warcio's cdx-index writes it. */
function cdxjLine(record: WARCRecord, written: WrittenRecord): string {
  const url = written.url;
  const fields: Record<string, string> = { url };
  const mime = record.warcType === 'revisit' ? 'warc/revisit' : httpHeader(record, 'content-type')?.split(';', 1)[0]?.trim();
  if (mime) fields['mime'] = mime;
  const status = record.httpHeaders?.statusCode;
  if (status !== undefined && status !== null) fields['status'] = String(status);
  if (written.payloadDigest) fields['digest'] = written.payloadDigest.split(':', 2)[1] ?? written.payloadDigest;
  fields['length'] = String(written.length);
  fields['offset'] = String(written.offset);
  fields['filename'] = written.filename;
  const timestamp = written.date.replace(/[-:T]/g, '').slice(0, 14);
  return `${warcio().getSurt(url)} ${timestamp} ${JSON.stringify(fields)}\n`;
}

/** An HTTP header of a record, by case-insensitive name (recorded headers keep their case). */
function httpHeader(record: WARCRecord, name: string): string | null {
  const headers = record.httpHeaders?.headers;
  if (headers === undefined) return null;
  for (const [key, value] of headers.entries()) if (key.toLowerCase() === name) return value;
  return null;
}

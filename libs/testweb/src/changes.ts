/**
 * The changing web: when each page's content changes, and the validators (ETag, Last-Modified)
 * and conditional-request answers that follow. A page's version is the number of changes it has
 * had: every `intervalMs` since the epoch, plus every touch(). Its body is a pure function of
 * (seed, host, page, version); only the touches are stored.
 */
import { TestWebError, TestWebErrorCode } from './errors.js';
import { hashInts } from './prng.js';

/** A named class of pages that change at one rate; pages are drawn into classes by weight. */
export interface ChangeClass {
  name: string;
  /** null = never changes (except by touch()). */
  everyMs: number | null;
  /** Relative share of pages; default 1. */
  weight?: number;
}

export interface ChangeOptions {
  /**
   * How often pages change: one interval for every page, or per (host, page); null = never. A
   * mirror's pages follow their original's. Ignored when `classes` is given. Default null.
   */
  everyMs?: number | null | ((host: number, page: number) => number | null);
  /** Classes drawn per page by seeded weight (each page's class: TestWeb.changeClassOf). */
  classes?: readonly ChangeClass[];
  /** When version 0 starts (epoch ms); default `now()` when the web starts, floored to a whole second. */
  epoch?: number;
}

/** Where a page stands at a moment. */
export interface PageVersion {
  /** Changes so far: natural ones (every interval since the epoch) plus touches. */
  version: number;
  /** When the current version began (epoch ms): the epoch for version 0. */
  changedAt: number;
  /** The strong ETag of this version, quotes included. */
  etag: string;
}

const STREAM_CLASS = 0xc1a5;
const STREAM_ETAG = 0xe7a6;

function checkInterval(name: string, value: number | null): number | null {
  if (value !== null && !(Number.isFinite(value) && value >= 1)) {
    throw new TestWebError(TestWebErrorCode.Options, `${name} must be null or a number of ms ≥ 1, got ${value}`);
  }
  return value;
}

export class ChangeSchedule {
  readonly epoch: number;
  private readonly classes: readonly Required<ChangeClass>[] | null;
  private readonly totalWeight: number;
  /** Touch times per `host:page`, ascending. */
  private readonly touches = new Map<string, number[]>();

  constructor(
    private readonly seed: number,
    private readonly options: ChangeOptions,
    startedAt: number,
  ) {
    this.epoch = options.epoch ?? Math.floor(startedAt / 1000) * 1000;
    if (!Number.isFinite(this.epoch)) throw new TestWebError(TestWebErrorCode.Options, `changes.epoch must be a finite time, got ${options.epoch}`);
    if (typeof options.everyMs === 'number') checkInterval('changes.everyMs', options.everyMs);
    if (options.classes !== undefined) {
      if (options.classes.length === 0) throw new TestWebError(TestWebErrorCode.Options, 'changes.classes must not be empty');
      this.classes = options.classes.map((c) => {
        const weight = c.weight ?? 1;
        if (!(Number.isFinite(weight) && weight > 0)) throw new TestWebError(TestWebErrorCode.Options, `changes.classes ${c.name}: weight must be > 0, got ${weight}`);
        return { name: c.name, everyMs: checkInterval(`changes.classes ${c.name}: everyMs`, c.everyMs), weight };
      });
      if (new Set(this.classes.map((c) => c.name)).size !== this.classes.length) {
        throw new TestWebError(TestWebErrorCode.Options, 'changes.classes names must be distinct');
      }
    } else this.classes = null;
    this.totalWeight = this.classes?.reduce((sum, c) => sum + c.weight, 0) ?? 0;
  }

  /** The class of a page (content host), or null when the options have no classes. */
  classOf(host: number, page: number): Required<ChangeClass> | null {
    if (this.classes === null) return null;
    let draw = (hashInts(this.seed, host, page, STREAM_CLASS) / 4294967296) * this.totalWeight;
    for (const c of this.classes) {
      if (draw < c.weight) return c;
      draw -= c.weight;
    }
    return this.classes[this.classes.length - 1] as Required<ChangeClass>;
  }

  /** The page's change interval in ms, or null when it never changes on its own. */
  intervalMs(host: number, page: number): number | null {
    if (this.classes !== null) return this.classOf(host, page)?.everyMs ?? null;
    const every = this.options.everyMs ?? null;
    return typeof every === 'function' ? checkInterval(`changes.everyMs(${host}, ${page})`, every(host, page)) : every;
  }

  /** The page's version, when it began and its ETag, at `at`. */
  state(host: number, page: number, at: number): PageVersion {
    const interval = this.intervalMs(host, page);
    const natural = interval === null || at < this.epoch ? 0 : Math.floor((at - this.epoch) / interval);
    let changedAt = this.epoch + natural * (interval ?? 0);
    let touched = 0;
    for (const time of this.touches.get(`${host}:${page}`) ?? []) {
      if (time > at) break;
      touched++;
      changedAt = Math.max(changedAt, time);
    }
    const version = natural + touched;
    return { version, changedAt, etag: `"${hashInts(this.seed, host, page, version, STREAM_ETAG).toString(16).padStart(8, '0')}-${version}"` };
  }

  /** A change of the page at `at` (its content, ETag, Last-Modified and sitemap lastmod move). */
  touch(host: number, page: number, at: number): PageVersion {
    const key = `${host}:${page}`;
    const times = this.touches.get(key) ?? [];
    let i = times.length;
    while (i > 0 && (times[i - 1] as number) > at) i--;
    times.splice(i, 0, at);
    this.touches.set(key, times);
    return this.state(host, page, at);
  }
}

/** An IMF-fixdate (RFC 9110 §5.6.7): `Sun, 06 Nov 1994 08:49:37 GMT`. */
export const httpDate = (ms: number): string => new Date(ms).toUTCString();

const opaqueTag = (tag: string): string => tag.trim().replace(/^W\//, '');

export interface ConditionalHeaders {
  ifNoneMatch?: string | undefined;
  ifModifiedSince?: string | undefined;
}

/**
 * Whether a conditional GET/HEAD gets 304 (RFC 9110 §13.1.2, §13.1.3, §13.2.2): If-None-Match
 * (weak comparison, `*` matches) decides when present; otherwise If-Modified-Since, a valid
 * HTTP-date at or after Last-Modified (which has whole seconds) means unchanged.
 */
export function notModified(headers: ConditionalHeaders, etag: string, lastModified: number): boolean {
  if (headers.ifNoneMatch !== undefined) {
    const tags = headers.ifNoneMatch.split(',').map(opaqueTag);
    return tags.includes('*') || tags.includes(opaqueTag(etag));
  }
  if (headers.ifModifiedSince !== undefined) {
    const since = Date.parse(headers.ifModifiedSince);
    return Number.isFinite(since) && Math.floor(lastModified / 1000) * 1000 <= since;
  }
  return false;
}

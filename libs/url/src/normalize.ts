import { ErrorCode } from '@trawl/core';
import { normalizePercent, PATH_RAW, QUERY_RAW } from './percent.js';
import { DEFAULT_STRIP_PARAMS, type ParamMatcher, paramMatcher } from './strip.js';

export interface NormalizeOptions {
  /** Query parameter names removed during normalization, matched case-insensitively; an entry ending in '*' is a prefix ('utm_*'). */
  stripParams: readonly string[];
  /** Sort query parameters by name (stable: equal names keep their relative order). */
  sortQuery: boolean;
  /** Canonical URLs longer than this (in characters) are rejected. */
  maxUrlLength: number;
}

export const DEFAULT_NORMALIZE_OPTIONS: NormalizeOptions = Object.freeze({
  stripParams: DEFAULT_STRIP_PARAMS,
  sortQuery: true,
  maxUrlLength: 2048,
});

export type NormalizeErrorCode =
  | typeof ErrorCode.UrlInvalid
  | typeof ErrorCode.UrlScheme
  | typeof ErrorCode.UrlTooLong;

export type NormalizeResult =
  | {
      ok: true;
      url: string;
      /**
       * The URL as the site spelled it (parsed, fragment dropped), when normalization removed or
       * reordered parameters of its path or query: rules written for the site's own spelling
       * (robots.txt) must be asked about this form as well. Absent when the two differ at most in
       * percent-encoding, case of scheme and host, port and dot-segments.
       */
      spelled?: string;
    }
  | { ok: false; code: NormalizeErrorCode; reason: string };

/**
 * `normalizeUrl`'s result with what its one parse found on the way: the canonical host (the
 * politeness key, as `hostOf` gives it) and the canonical path (what `new URL(url).pathname`
 * gives). Discovery judges a link's scope and file extension from these instead of parsing the
 * canonical URL again for each.
 */
export type NormalizedLink =
  | { ok: true; url: string; spelled?: string; host: string; path: string }
  | { ok: false; code: NormalizeErrorCode; reason: string };

/** A parsed http(s) URL, or why there is none. */
export type ParsedHttpUrl =
  | { ok: true; url: URL; host: string }
  | { ok: false; code: NormalizeErrorCode; reason: string };

/**
 * Resolve `raw` against `base` (a page URL or a <base href> already resolved) and return the one
 * canonical form. Never throws.
 */
export function normalizeUrl(
  raw: string,
  base?: string | URL,
  options: NormalizeOptions = DEFAULT_NORMALIZE_OPTIONS,
): NormalizeResult {
  const link = normalizeLink(raw, base, options);
  if (!link.ok) return link;
  return link.spelled === undefined ? { ok: true, url: link.url } : { ok: true, url: link.url, spelled: link.spelled };
}

/** `normalizeUrl`, also giving the canonical host and path it found (see `NormalizedLink`). */
export function normalizeLink(
  raw: string,
  base?: string | URL,
  options: NormalizeOptions = DEFAULT_NORMALIZE_OPTIONS,
): NormalizedLink {
  const parsed = parseHttpUrl(raw, base);
  if (!parsed.ok) return parsed;
  const { url, host } = parsed;
  const matcher = paramMatcher(options.stripParams);

  const path = canonicalPath(url.pathname, matcher);
  let canonical = `${url.protocol}//${host}${path.path}`;
  let respelled = path.stripped;
  // `search` is '' for both "no query" and a bare '?', so an empty query disappears here.
  if (url.search.length > 1) {
    const query = canonicalQuery(url.search.slice(1), matcher, options.sortQuery);
    if (query.text !== '') canonical += `?${query.text}`;
    respelled ||= query.respelled;
  }
  // The fragment is never part of the canonical form: it is not sent to the server.

  if (canonical.length > options.maxUrlLength) {
    return {
      ok: false,
      code: ErrorCode.UrlTooLong,
      reason: `canonical URL is ${canonical.length} characters, more than ${options.maxUrlLength}`,
    };
  }
  return respelled
    ? { ok: true, url: canonical, spelled: `${url.protocol}//${host}${url.pathname}${url.search}`, host, path: path.path }
    : { ok: true, url: canonical, host, path: path.path };
}

/**
 * WHATWG-parse `raw` against `base` and accept only http(s) URLs with a host. Also returns the
 * canonical host (lowercase, punycode, no trailing dot, non-default port). Never throws.
 */
export function parseHttpUrl(raw: string, base?: string | URL): ParsedHttpUrl {
  if (typeof raw !== 'string') {
    return { ok: false, code: ErrorCode.UrlInvalid, reason: `not a string: ${typeof raw}` };
  }
  // WHATWG strips only C0 controls and spaces; trim() also removes NBSP and other Unicode spaces
  // that copy-pasted hrefs carry.
  const input = raw.trim();
  let url = tryParse(input, base);
  // An unusable base must not sink an absolute URL: resolve without it.
  if (url === undefined && base !== undefined) url = tryParse(input, undefined);
  if (url === undefined) {
    return {
      ok: false,
      code: ErrorCode.UrlInvalid,
      reason: base === undefined ? `not a valid absolute URL: ${quote(input)}` : `not a valid URL: ${quote(input)}`,
    };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return { ok: false, code: ErrorCode.UrlScheme, reason: `scheme ${quote(url.protocol.slice(0, -1))} is not http or https` };
  }
  // RFC 1034 §3.1: a trailing dot marks an absolute name; `example.com.` is `example.com`.
  let end = url.hostname.length;
  while (end > 0 && url.hostname.charCodeAt(end - 1) === 0x2e /* . */) end--;
  if (end === 0) return { ok: false, code: ErrorCode.UrlInvalid, reason: `no host: ${quote(input)}` };
  const hostname = end === url.hostname.length ? url.hostname : url.hostname.slice(0, end);
  // WHATWG already dropped the scheme's default port and lowercased the host.
  const host = url.port === '' ? hostname : `${hostname}:${url.port}`;
  return { ok: true, url, host };
}

function tryParse(input: string, base: string | URL | undefined): URL | undefined {
  try {
    return new URL(input, base);
  } catch {
    return undefined;
  }
}

/** For error reasons: quoted and cut short, so a megabyte data: URL never reaches a log line. */
function quote(text: string): string {
  return JSON.stringify(text.length > 200 ? `${text.slice(0, 200)}…` : text);
}

/** The path with percent-encoding normalized and session matrix parameters removed (`stripped`: some were). */
function canonicalPath(pathname: string, matcher: ParamMatcher): { path: string; stripped: boolean } {
  // WHATWG has already resolved dot-segments (also the %2e forms) and turned '' into '/'.
  const path = normalizePercent(pathname, PATH_RAW);
  if (!matcher.active || !path.includes(';')) return { path, stripped: false };
  const stripped = stripMatrixParams(path, matcher);
  return { path: stripped, stripped: stripped !== path };
}

/**
 * Drop `;name=value` path parameters whose name is in the strip list, e.g. the servlet session id
 * in `/cart;jsessionid=0F3A…`. Other matrix parameters stay, in their order.
 */
function stripMatrixParams(path: string, matcher: ParamMatcher): string {
  const segments = path.split('/');
  let changed = false;
  for (let s = 0; s < segments.length; s++) {
    const segment = segments[s];
    if (segment === undefined || !segment.includes(';')) continue;
    const parts = segment.split(';');
    const kept = [parts[0] ?? ''];
    for (let p = 1; p < parts.length; p++) {
      const param = parts[p] ?? '';
      const eq = param.indexOf('=');
      if (matcher.matches(eq < 0 ? param : param.slice(0, eq))) changed = true;
      else kept.push(param);
    }
    if (kept.length !== parts.length) segments[s] = kept.join(';');
  }
  // Removing a parameter can leave a dot-segment behind (`/a/..;jsessionid=1/b` → `/a/../b`),
  // which the parser would resolve on the next pass: resolve it now to stay idempotent.
  return changed ? removeDotSegments(segments) : path;
}

/** RFC 3986 §5.2.4 over the segments of an absolute path (segments[0] is the '' before the first '/'). */
function removeDotSegments(segments: readonly string[]): string {
  if (!segments.some((segment) => segment === '.' || segment === '..')) return segments.join('/');
  const out: string[] = [];
  const last = segments.length - 1;
  for (let s = 1; s <= last; s++) {
    const segment = segments[s] ?? '';
    if (segment === '..') out.pop();
    if (segment === '.' || segment === '..') {
      // A dot-segment at the end still names a directory: `/a/b/..` is `/a/`.
      if (s === last) out.push('');
      continue;
    }
    out.push(segment);
  }
  return `/${out.join('/')}`;
}

interface QueryParam {
  readonly name: string;
  readonly text: string;
}

/**
 * The query with each parameter's name and value percent-normalized, stripped parameters and
 * empty pairs (`&&`) removed, and (optionally) a stable sort by name. `+` and `%20` are kept
 * apart: they mean the same only to form decoders, not to every server. `respelled`: a parameter
 * was removed or moved.
 */
function canonicalQuery(query: string, matcher: ParamMatcher, sort: boolean): { text: string; respelled: boolean } {
  const params: QueryParam[] = [];
  let respelled = false;
  for (const pair of query.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const name = normalizePercent(eq < 0 ? pair : pair.slice(0, eq), QUERY_RAW);
    if (matcher.active && matcher.matches(name)) {
      respelled = true;
      continue;
    }
    // A parameter without '=' keeps that form: `?a` and `?a=` can differ to a server.
    const text = eq < 0 ? name : `${name}=${normalizePercent(pair.slice(eq + 1), QUERY_RAW)}`;
    params.push({ name, text });
  }
  // Array.prototype.sort is stable (ES2019), so repeated names keep their order (`a=2&a=1`).
  // Code-unit order, not localeCompare: the canonical form must not depend on the locale.
  if (sort && params.length > 1 && !isSorted(params)) {
    params.sort(byName);
    respelled = true;
  }
  let out = '';
  for (let p = 0; p < params.length; p++) out += p === 0 ? params[p]?.text : `&${params[p]?.text}`;
  return { text: out, respelled };
}

function isSorted(params: readonly QueryParam[]): boolean {
  for (let p = 1; p < params.length; p++) if (byName(params[p - 1] as QueryParam, params[p] as QueryParam) > 0) return false;
  return true;
}

function byName(a: QueryParam, b: QueryParam): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

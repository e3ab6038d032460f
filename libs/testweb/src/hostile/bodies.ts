/** Generated bodies of the hostile web: the endless calendar, the oversized robots.txt and page, the tarpit. */
import type http from 'node:http';
import type { HostHandlerContext } from '../options.js';
import type { Route } from './site.js';
import { HTML, htmlDoc, pause, sendBody, streamBody } from './site.js';

// ---------------------------------------------------------------- calendar

const DAY_MS = 86_400_000;
const pad = (n: number, width: number): string => String(n).padStart(width, '0');

/** A UTC midnight as `{ query: '/calendar?date=2026-11-30', path: '/calendar/2026/11/30' }`. */
export function calendarKeys(time: number): { query: string; path: string } {
  const d = new Date(time);
  const [y, m, day] = [pad(d.getUTCFullYear(), 4), pad(d.getUTCMonth() + 1, 2), pad(d.getUTCDate(), 2)];
  return { query: `/calendar?date=${y}-${m}-${day}`, path: `/calendar/${y}/${m}/${day}` };
}

/** The day a request key names (either form), or null; years 1000–9999 only, real dates only. */
export function calendarDay(key: string): number | null {
  const match = /^\/calendar(?:\?date=(\d{4})-(\d{2})-(\d{2})|\/(\d{4})\/(\d{2})\/(\d{2}))$/.exec(key);
  if (match === null) return null;
  const [y, m, d] = (match[1] === undefined ? match.slice(4, 7) : match.slice(1, 4)).map(Number) as [number, number, number];
  if (y < 1000) return null;
  const time = Date.UTC(y, m - 1, d);
  const back = new Date(time);
  return back.getUTCFullYear() === y && back.getUTCMonth() === m - 1 && back.getUTCDate() === d ? time : null;
}

/** The first day the calendar host links to: in 2026, chosen by the seed. */
export const calendarStart = (seed: number): number => Date.UTC(2026, 0, 1) + ((seed >>> 0) % 365) * DAY_MS;

/** A day's page: the previous and next day in the same form, the same day in the other form. */
export function calendarPage(key: string, time: number): string {
  const keys = calendarKeys(time);
  const isQuery = key.startsWith('/calendar?');
  const form = (k: { query: string; path: string }): string => (isQuery ? k.query : k.path);
  const links = [form(calendarKeys(time - DAY_MS)), form(calendarKeys(time + DAY_MS)), isQuery ? keys.path : keys.query, '/'];
  return htmlDoc(`Calendar ${keys.query.slice(-10)}`, links, { text: 'Nothing happens today. Tomorrow might be different.' });
}

// ---------------------------------------------------------------- robots.txt of 600 KiB

export const HUGE_ROBOTS = {
  bytes: 600 * 1024,
  /** Where `Disallow: /after/` starts: past the 500 KiB (512,000 bytes) RFC 9309 §2.5 requires parsing. */
  afterOffset: 560 * 1024,
  beforeRule: '/before/',
  afterRule: '/after/',
} as const;

/** Comment lines (2…100 bytes, never blank: a blank line ends a group for old parsers) filling exactly `bytes` (≥ 2). */
function commentPadding(bytes: number, label: string): string {
  const lines: string[] = [];
  let left = bytes;
  for (let n = 0; left > 0; n++) {
    const size = left > 200 ? 100 : left > 100 ? Math.ceil(left / 2) : left;
    const text = `# ${label} ${n} `.padEnd(size - 1, '.').slice(0, size - 1);
    lines.push(`${text}\n`);
    left -= size;
  }
  return lines.join('');
}

/** One rule early, then comments, then one rule after 560 KiB, then comments up to 600 KiB. */
export function hugeRobotsTxt(): string {
  const head = '# A robots.txt larger than the 500 KiB a crawler must parse (RFC 9309 section 2.5).\nUser-agent: *\n' +
    `Disallow: ${HUGE_ROBOTS.beforeRule}\n`;
  const late = `Disallow: ${HUGE_ROBOTS.afterRule}\n`;
  const body = head + commentPadding(HUGE_ROBOTS.afterOffset - head.length, 'padding') + late;
  return body + commentPadding(HUGE_ROBOTS.bytes - body.length, 'tail');
}

// ---------------------------------------------------------------- huge page

export interface HugePageLink {
  href: string;
  /** Byte offset of the `<a` in the body. */
  offset: number;
}

const HUGE_HEAD = '<!doctype html>\n<html><head><meta charset="utf-8"><title>huge page</title></head>\n<body>\n<h1>A very long page</h1>\n<div>\n';
const HUGE_TAIL = '\n</div>\n</body>\n</html>\n';
const FILLER = (() => {
  const words = 'the crawler reads on and on through a page that never seems to end while links hide in the text ';
  return Buffer.from(words.repeat(Math.ceil(65_536 / words.length)).slice(0, 65_536), 'utf8');
})();
const anchor = (href: string): string => ` <a href="${href}">${href}</a> `;

/**
 * Where the links of the huge page sit: `/huge/before/1…4` at the top and at 25 %, 50 % and
 * 90 % of the body cap; `/huge/after/1…2` 256 KiB past the cap and just before the end.
 */
export function hugePageLayout(totalBytes: number, capBytes: number): { before: HugePageLink[]; after: HugePageLink[] } {
  const before = [HUGE_HEAD.length, Math.floor(capBytes * 0.25), Math.floor(capBytes * 0.5), Math.floor(capBytes * 0.9)];
  const after = [capBytes + 256 * 1024, totalBytes - 4096];
  return {
    before: before.map((offset, i) => ({ href: `/huge/before/${i + 1}`, offset })),
    after: after.map((offset, i) => ({ href: `/huge/after/${i + 1}`, offset })),
  };
}

/** The body in pieces: head, filler, links at their offsets, filler, tail; exactly totalBytes. */
function* hugePageChunks(totalBytes: number, links: readonly HugePageLink[]): Generator<Buffer> {
  let at = 0;
  const filler = function* (until: number): Generator<Buffer> {
    while (at < until) {
      const size = Math.min(FILLER.byteLength, until - at);
      at += size;
      yield FILLER.subarray(0, size);
    }
  };
  yield Buffer.from(HUGE_HEAD, 'utf8');
  at = HUGE_HEAD.length;
  for (const link of links) {
    yield* filler(link.offset);
    const bytes = Buffer.from(anchor(link.href), 'utf8');
    at += bytes.byteLength;
    yield bytes;
  }
  yield* filler(totalBytes - HUGE_TAIL.length);
  yield Buffer.from(HUGE_TAIL, 'utf8');
}

export function hugePageRoute(totalBytes: number, capBytes: number): Route {
  const layout = hugePageLayout(totalBytes, capBytes);
  const links = [...layout.before, ...layout.after];
  return async (req, res, ctx) => {
    res.writeHead(200, { 'content-type': HTML, 'content-length': totalBytes });
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    await streamBody(res, ctx.signal, hugePageChunks(totalBytes, links));
  };
}

// ---------------------------------------------------------------- tarpit

const TARPIT_TEXT = Buffer.from('<!doctype html>\n<html><head><title>tarpit</title></head><body><p>', 'utf8');

/**
 * Headers at once, then one body byte every `intervalMs` (on a fixed schedule from the headers,
 * so the rate holds however late timers fire), until the client leaves or the web stops.
 */
export function tarpitRoute(intervalMs: number): Route {
  return async (req: http.IncomingMessage, res: http.ServerResponse, ctx: HostHandlerContext) => {
    if (req.method === 'HEAD') {
      sendBody(req, res, 200, { 'content-type': HTML }, '');
      return;
    }
    res.writeHead(200, { 'content-type': HTML, 'cache-control': 'no-store' });
    res.flushHeaders();
    const started = performance.now();
    for (let n = 0; !res.destroyed && !ctx.signal.aborted; n++) {
      await pause(started + (n + 1) * intervalMs - performance.now(), res, ctx.signal);
      if (res.destroyed || ctx.signal.aborted) return;
      res.write(n < TARPIT_TEXT.byteLength ? TARPIT_TEXT.subarray(n, n + 1) : '.');
    }
  };
}

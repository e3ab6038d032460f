/**
 * Crawler-trap heuristics (infinite URL spaces: calendars, session ids, faceted search): URL shapes that
 * generate endless distinct links. Pure: the per-host budget and the per-path cap on query
 * variants need shared state and live in the frontier.
 */
export interface TrapOptions {
  /** A path segment repeated more often than this (/a/b/a/b/a/b…) marks a loop of relative links. */
  maxSegmentRepeats: number;
  maxPathSegments: number;
  /** Query parameters per URL (ever-growing query strings). */
  maxQueryParams: number;
  /** Dates in the path or query outside [now − past, now + future] years are a calendar's far reaches. */
  calendarPastYears: number;
  calendarFutureYears: number;
}

export const DEFAULT_TRAP_OPTIONS: TrapOptions = {
  maxSegmentRepeats: 2,
  maxPathSegments: 40,
  maxQueryParams: 30,
  calendarPastYears: 30,
  calendarFutureYears: 1,
};

export type TrapReason = 'repeated-segments' | 'deep-path' | 'query-explosion' | 'calendar';

const YEAR_MONTH_DAY = /(?:^|[^\d])((?:1[5-9]|2[01])\d{2})[-/._]?(0[1-9]|1[0-2])(?:[-/._]?(0[1-9]|[12]\d|3[01]))?(?:[^\d]|$)/;
const YEAR_SEGMENT = /^(?:1[5-9]|2[01])\d{2}$/;
const MONTH = /^(?:0?[1-9]|1[0-2])$/;

function yearOutside(year: number, now: number, options: TrapOptions): boolean {
  const current = new Date(now).getUTCFullYear();
  return year < current - options.calendarPastYears || year > current + options.calendarFutureYears;
}

/** Why the URL looks like a trap, or null. `url` is canonical. */
export function trapReason(url: string, options: TrapOptions, now: number): TrapReason | null {
  const schemeEnd = url.indexOf('://');
  const pathStart = url.indexOf('/', schemeEnd + 3);
  if (pathStart < 0) return null;
  const queryStart = url.indexOf('?', pathStart);
  const path = queryStart < 0 ? url.slice(pathStart) : url.slice(pathStart, queryStart);
  const query = queryStart < 0 ? '' : url.slice(queryStart + 1);

  const segments = path.split('/').filter(Boolean);
  if (segments.length > options.maxPathSegments) return 'deep-path';
  const counts = new Map<string, number>();
  for (const segment of segments) {
    const n = (counts.get(segment) ?? 0) + 1;
    if (n > options.maxSegmentRepeats) return 'repeated-segments';
    counts.set(segment, n);
  }

  if (query !== '' && query.split('&').length > options.maxQueryParams) return 'query-explosion';

  // Calendars: /2031/05/17, /2031-05-17, ?date=20310517, ?year=1850 …
  for (let i = 0; i < segments.length; i += 1) {
    const segment = segments[i] as string;
    // A bare year counts only as /YYYY/MM: alone it is as likely an id (/products/1600).
    const month = segments[i + 1];
    if (YEAR_SEGMENT.test(segment) && month !== undefined && MONTH.test(month) && yearOutside(Number(segment), now, options)) return 'calendar';
    const match = YEAR_MONTH_DAY.exec(segment);
    if (match && yearOutside(Number(match[1]), now, options)) return 'calendar';
  }
  if (query !== '') {
    for (const pair of query.split('&')) {
      const value = pair.slice(pair.indexOf('=') + 1);
      const match = YEAR_MONTH_DAY.exec(value);
      if (match && yearOutside(Number(match[1]), now, options)) return 'calendar';
      if (YEAR_SEGMENT.test(value) && /^(?:y|yr|year|jahr|annee|anno)=/i.test(pair) && yearOutside(Number(value), now, options)) return 'calendar';
    }
  }
  return null;
}

/** A date with separators inside one path segment or query value: 2031-05-17, 2031_05, 2031.05.17. */
const SEPARATED_DATE = /(?:^|[^\d])(?:1[5-9]|2[01])\d{2}[-._](?:0[1-9]|1[0-2])(?:[-._](?:0[1-9]|[12]\d|3[01]))?(?:[^\d]|$)/;
const DAY = /^(?:0?[1-9]|[12]\d|3[01])$/;
const YEAR_PARAM = /^(?:y|yr|year|jahr|annee|anno)=/i;

/** Marks a date pattern's variant key (no normalized URL or host holds a space). */
export const DATE_VARIANT_PREFIX = 'date ';

/** Where a path's date starts and how many segments it spans, or null: /2031/05[/17], or one segment holding 2031-05-17. */
function dateInPath(segments: readonly string[]): { at: number; span: number } | null {
  for (let i = 0; i < segments.length; i += 1) {
    const segment = segments[i] as string;
    if (SEPARATED_DATE.test(segment)) return { at: i, span: 1 };
    if (YEAR_SEGMENT.test(segment) && MONTH.test(segments[i + 1] ?? '')) return { at: i, span: DAY.test(segments[i + 2] ?? '') ? 3 : 2 };
  }
  return null;
}

/**
 * The pattern the frontier counts a URL's variants under, to cap infinite spaces per path:
 *  - a date pattern — a date in the path (/YYYY/MM[/DD], or a segment like 2031-05-17) or a query
 *    value that is a date (?date=2031-05-17, ?year=2031): `date ` + host + the path with the date
 *    as `*` (and the rest's digit runs as `#`). A calendar's two forms, `/calendar/2031/05/17`
 *    and `/calendar?date=2031-05-17`, share `date host/calendar/*`, while
 *    `/blog/2026/11/30/some-post` stays its own pattern (`date host/blog/*` + `/some-post`);
 *    the frontier caps these at TRAWL_MAX_DATE_VARIANTS;
 *  - any other URL with a query: host + path (`/search?q=a` and `/search?q=b` share
 *    `host/search?`), capped at TRAWL_MAX_QUERY_VARIANTS;
 *  - anything else: null (not counted; numeric ids like /item/12345 are never capped here).
 */
export function variantKey(url: string): string | null {
  const schemeEnd = url.indexOf('://');
  const pathStart = url.indexOf('/', schemeEnd + 3);
  if (pathStart < 0) return null;
  const host = url.slice(schemeEnd + 3, pathStart);
  const queryStart = url.indexOf('?', pathStart);
  const path = queryStart < 0 ? url.slice(pathStart) : url.slice(pathStart, queryStart);
  const segments = path.split('/');
  const date = dateInPath(segments);
  if (date !== null) {
    const before = segments.slice(0, date.at).join('/');
    const after = segments.slice(date.at + date.span).join('/').replace(/\d+/g, '#');
    return `${DATE_VARIANT_PREFIX}${host}${before}/*${date.at + date.span < segments.length ? `/${after}` : ''}`;
  }
  if (queryStart < 0) return null;
  const datedQuery = url
    .slice(queryStart + 1)
    .split('&')
    .some((pair) => {
      const value = pair.slice(pair.indexOf('=') + 1);
      return SEPARATED_DATE.test(value) || (YEAR_SEGMENT.test(value) && YEAR_PARAM.test(pair));
    });
  if (datedQuery) return `${DATE_VARIANT_PREFIX}${host}${path.replace(/\/$/, '')}/*`;
  return `${host}${path}?`;
}

/** Whether a variant key names a date pattern (capped by TRAWL_MAX_DATE_VARIANTS). */
export const isDateVariant = (key: string): boolean => key.startsWith(DATE_VARIANT_PREFIX);

/**
 * W3C Datetime (https://www.w3.org/TR/NOTE-datetime), the format of <lastmod>: YYYY, YYYY-MM,
 * YYYY-MM-DD, or a date with hh:mm, hh:mm:ss or hh:mm:ss.s and a time zone (Z, +hh:mm or
 * -hh:mm). A date without a time is midnight UTC. Sitemaps in the wild also write a time
 * without a zone, a space instead of T, or an offset without its colon (+0200): accepted, a
 * missing zone read as UTC.
 */
const W3C_DATETIME =
  /^(\d{4})(?:-(\d{2})(?:-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?)?)?)?$/i;

function daysIn(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** Epoch milliseconds, or null when `text` is not a valid W3C datetime. */
export function parseW3cDatetime(text: string): number | null {
  const match = W3C_DATETIME.exec(text.trim());
  if (!match) return null;
  const [, y, mo = '1', d = '1', h = '0', mi = '0', s = '0', fraction = '', zone = 'Z'] = match;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hour = Number(h);
  const minute = Number(mi);
  const second = Number(s);
  // Date.UTC reads years 0–99 as 1900–1999; no sitemap predates year 1000 anyway.
  if (year < 1000) return null;
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return null;
  if (hour > 23 || minute > 59 || second > 59) return null;
  let offsetMinutes = 0;
  if (zone.toUpperCase() !== 'Z') {
    const digits = zone.slice(1).replace(':', '');
    const zoneHours = Number(digits.slice(0, 2));
    const zoneMinutes = Number(digits.slice(2) || '0');
    if (zoneHours > 23 || zoneMinutes > 59) return null;
    offsetMinutes = (zone.startsWith('-') ? -1 : 1) * (zoneHours * 60 + zoneMinutes);
  }
  const ms = fraction === '' ? 0 : Math.floor(Number(`0.${fraction}`) * 1000);
  return Date.UTC(year, month - 1, day, hour, minute, second, ms) - offsetMinutes * 60_000;
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
/** RFC 822 §5.1 zone names, as hours from UTC (the military letters other than Z are unreliable and refused). */
const ZONES: Readonly<Record<string, number>> = { ut: 0, utc: 0, gmt: 0, z: 0, est: -5, edt: -4, cst: -6, cdt: -5, mst: -7, mdt: -6, pst: -8, pdt: -7 };
const RFC822_DATE =
  /^(?:(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*\s*,\s*)?(\d{1,2})\s+([a-z]{3})[a-z]*\s+(\d{2}|\d{4})\s+(\d{1,2}):(\d{2})(?::(\d{2}))?\s+([+-]\d{4}|[a-z]{1,3})$/i;

/**
 * The date of an RSS `<pubDate>` (RFC 822 §5, as updated by RFC 2822 §3.3): `[Day, ]DD Mon YY[YY]
 * hh:mm[:ss] zone`, the zone an offset (+0100) or a name (GMT, EST…); a two-digit year is 1950–2049
 * (RFC 2822 §4.3). Epoch milliseconds, or null — also for a date without a zone, whose instant
 * is unknown.
 */
export function parseRfc822Date(text: string): number | null {
  const match = RFC822_DATE.exec(text.trim());
  if (!match) return null;
  const [, d, mon = '', y = '', h, mi, s = '0', zone = ''] = match;
  const month = MONTHS.indexOf(mon.toLowerCase()) + 1;
  let year = Number(y);
  if (y.length === 2) year += year < 50 ? 2000 : 1900;
  const day = Number(d);
  const hour = Number(h);
  const minute = Number(mi);
  const second = Number(s);
  if (month === 0 || day < 1 || day > daysIn(year, month) || hour > 23 || minute > 59 || second > 60) return null;
  let offsetMinutes: number;
  if (zone.startsWith('+') || zone.startsWith('-')) {
    const zoneHours = Number(zone.slice(1, 3));
    const zoneMinutes = Number(zone.slice(3, 5));
    if (zoneHours > 23 || zoneMinutes > 59) return null;
    offsetMinutes = (zone.startsWith('-') ? -1 : 1) * (zoneHours * 60 + zoneMinutes);
  } else {
    const hours = ZONES[zone.toLowerCase()];
    if (hours === undefined) return null;
    offsetMinutes = hours * 60;
  }
  return Date.UTC(year, month - 1, day, hour, minute, Math.min(second, 59)) - offsetMinutes * 60_000;
}

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

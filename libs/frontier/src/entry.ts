/**
 * A queued URL is one compact string in its host's back queue: "<depth> <hops> <flags> <url>".
 * Canonical URLs never contain spaces, so the URL is everything after the third space.
 */
export const UrlFlag = {
  /** Added as a seed by an operator. */
  Seed: 1,
  /** Re-injected by the re-crawl scheduler. */
  Recrawl: 2,
  /** The Location of a redirect. */
  RedirectTarget: 4,
} as const;

export interface FrontierUrl {
  url: string;
  depth: number;
  /** Redirect hops that led here (0 for a URL found as a link). */
  hops: number;
  flags: number;
}

export function encodeEntry(item: FrontierUrl): string {
  return `${item.depth} ${item.hops} ${item.flags} ${item.url}`;
}

export function decodeEntry(entry: string): FrontierUrl {
  const a = entry.indexOf(' ');
  const b = entry.indexOf(' ', a + 1);
  const c = entry.indexOf(' ', b + 1);
  if (a < 0 || b < 0 || c < 0) throw new Error(`malformed frontier entry: ${entry.slice(0, 80)}`);
  return {
    depth: Number(entry.slice(0, a)),
    hops: Number(entry.slice(a + 1, b)),
    flags: Number(entry.slice(b + 1, c)),
    url: entry.slice(c + 1),
  };
}

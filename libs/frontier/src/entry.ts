/**
 * A queued URL is one compact string in its host's back queue: "<depth> <hops> <flags> <url>"
 * ("<depth>/<maxDepth> …" when its seed set a depth limit of its own).
 * Canonical URLs never contain spaces, so the URL is everything after the third space. The
 * back queue already names the host, so a URL on its own origin is stored as its path alone
 * (the scheme in a flag bit): about a third less Redis memory per queued URL.
 */
export const UrlFlag = {
  /** Added as a seed by an operator. */
  Seed: 1,
  /** Re-injected by the re-crawl scheduler. */
  Recrawl: 2,
  /** The Location of a redirect. */
  RedirectTarget: 4,
  /** A sitemap (robots.txt `Sitemap:` or /sitemap.xml): parsed for URLs, not for links. */
  Sitemap: 8,
  /**
   * The URL may have been fetched and recorded already: it came back from a lease that was never
   * acknowledged (a worker killed between its record and its ack, an ack lost with Redis), or it
   * was restored from PostgreSQL by `trawl frontier rebuild`. Its job asks PostgreSQL first and
   * does not fetch a URL recorded since it was queued. Set by the frontier's Lua (lease expiry
   * uses the bit's value, 16, directly).
   */
  Verify: 16,
} as const;

/** Entry-only flag: the stored URL is a path on https://<host> (else http://<host>). */
const HTTPS_PATH = 1 << 10;

export interface FrontierUrl {
  url: string;
  depth: number;
  /**
   * Links followed from its seed at most, when the seed asked for a limit of its own (a seeds
   * job's `max_depth`); inherited by what it links to. The crawl's own limit applies as well.
   */
  maxDepth?: number | null;
  /** Redirect hops that led here (0 for a URL found as a link). */
  hops: number;
  flags: number;
}

export function encodeEntry(item: FrontierUrl, host: string): string {
  const flags = item.flags & ~HTTPS_PATH;
  // "<depth>" or, with a seed's own depth limit, "<depth>/<maxDepth>".
  const depth = item.maxDepth === undefined || item.maxDepth === null ? `${item.depth}` : `${item.depth}/${item.maxDepth}`;
  for (const [scheme, bit] of [['https://', HTTPS_PATH], ['http://', 0]] as const) {
    const origin = `${scheme}${host}`;
    if (item.url.startsWith(origin) && item.url.charCodeAt(origin.length) === 47 /* / */) {
      return `${depth} ${item.hops} ${flags | bit} ${item.url.slice(origin.length)}`;
    }
  }
  return `${depth} ${item.hops} ${flags} ${item.url}`;
}

export function decodeEntry(entry: string, host: string): FrontierUrl {
  const a = entry.indexOf(' ');
  const b = entry.indexOf(' ', a + 1);
  const c = entry.indexOf(' ', b + 1);
  if (a < 0 || b < 0 || c < 0) throw new Error(`malformed frontier entry: ${entry.slice(0, 80)}`);
  const flags = Number(entry.slice(b + 1, c));
  const stored = entry.slice(c + 1);
  const depthField = entry.slice(0, a);
  const slash = depthField.indexOf('/');
  return {
    depth: Number(slash < 0 ? depthField : depthField.slice(0, slash)),
    ...(slash < 0 ? {} : { maxDepth: Number(depthField.slice(slash + 1)) }),
    hops: Number(entry.slice(a + 1, b)),
    flags: flags & ~HTTPS_PATH,
    url: stored.startsWith('/') ? `${flags & HTTPS_PATH ? 'https' : 'http'}://${host}${stored}` : stored,
  };
}

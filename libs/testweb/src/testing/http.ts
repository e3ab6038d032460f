/**
 * A raw HTTP client and a tiny breadth-first crawler for this lib's own tests: the path goes on
 * the wire exactly as given, bodies come back as bytes. Not exported from the package.
 */
import http from 'node:http';
import { requestKey } from '../request-key.js';

export interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

export function httpGet(url: string, options: { method?: string; headers?: Record<string, string>; path?: string } = {}): Promise<Reply> {
  const { hostname, port, pathname, search } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: hostname, port, path: options.path ?? pathname + search, method: options.method ?? 'GET', headers: options.headers, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const unescapeHtml = (text: string): string => text.replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');

/** Absolute URLs of a page's `<a href>`s (rel=nofollow left out), resolved against its `<base href>` if any. */
export function pageLinks(html: string, pageUrl: string): string[] {
  const base = /<base href="([^"]*)">/.exec(html)?.[1];
  const baseUrl = base === undefined ? pageUrl : new URL(unescapeHtml(base), pageUrl).href;
  const links: string[] = [];
  for (const m of html.matchAll(/<a href="([^"]*)"( rel="[^"]*nofollow[^"]*")?>/g)) {
    if (m[2] !== undefined) continue;
    try {
      const url = new URL(unescapeHtml(m[1] as string), baseUrl);
      if (url.protocol === 'http:') links.push(url.href);
    } catch {
      // Not a URL: skipped, as a crawler would.
    }
  }
  return links;
}

/** The server's canonical form of a URL: origin + requestKey. */
export function canonical(url: string): string {
  const parsed = new URL(url);
  return `${parsed.origin}${requestKey(parsed.pathname + parsed.search) ?? parsed.pathname}`;
}

export interface MiniCrawl {
  /** Canonical URL → reply, for every URL fetched (HTML or not). */
  fetched: Map<string, Reply>;
}

/**
 * Fetches every link reachable from the seeds on `origins`, one request at a time, once per
 * canonical URL; follows links only out of text/html bodies. Bounded by `maxRequests`.
 */
export async function miniCrawl(seeds: readonly string[], origins: readonly string[], options: { maxRequests?: number; skip?: (url: string) => boolean } = {}): Promise<MiniCrawl> {
  const allowed = new Set(origins);
  const fetched = new Map<string, Reply>();
  const queue = [...seeds];
  const seen = new Set(seeds.map(canonical));
  const max = options.maxRequests ?? 5000;
  while (queue.length > 0 && fetched.size < max) {
    const url = queue.shift() as string;
    const reply = await httpGet(url);
    fetched.set(canonical(url), reply);
    if (reply.status !== 200 || !String(reply.headers['content-type']).startsWith('text/html')) continue;
    for (const link of pageLinks(reply.body.toString('utf8'), url)) {
      const key = canonical(link);
      if (!allowed.has(new URL(link).origin) || seen.has(key) || options.skip?.(link)) continue;
      seen.add(key);
      queue.push(link);
    }
  }
  return { fetched };
}

import { crossScriptedHost, scriptedHost, scriptedPageUrls, type ScriptedKind, TestWeb, type TestWebOptions } from '@trawl/testweb';

/** The rendering tests' web: host 0 plain, host 1 a single-page app, host 2 a hybrid site. */
export const SCRIPTED_HOSTS: Readonly<Record<number, ScriptedKind>> = { 1: 'spa', 2: 'hybrid' };
export const PLAIN_HOST = 0;

interface WebOptions {
  pages: number;
  crawlDelayS: number;
  seed: number;
  /** Names the hosts (`h1.<hostnames>`, see `TestWeb.hostsFile`). */
  hostnames?: string;
  /** The loopback address of host 0 (the others follow it). */
  baseAddress?: string;
}

/**
 * A plain host (host 0, `pages` pages) and two extra hosts served by `hostHandlers`, every
 * robots.txt with this Crawl-delay.
 */
function startWithExtraHosts(options: WebOptions, hostHandlers: TestWebOptions['hostHandlers']): Promise<TestWeb> {
  const { pages, crawlDelayS, seed } = options;
  return TestWeb.start({
    ...(options.hostnames === undefined ? {} : { hostnames: options.hostnames }),
    ...(options.baseAddress === undefined ? {} : { baseAddress: options.baseAddress }),
    hosts: 1,
    pagesPerHost: pages,
    linksPerPage: 3,
    crossHostLinks: 0,
    noisyLinks: false,
    latencyMs: { min: 1, max: 5 },
    seed,
    extraHosts: 2,
    robotsTxt: () => `User-agent: *\nCrawl-delay: ${crawlDelayS}\nAllow: /\n`,
    hostHandlers,
  });
}

/** A plain host and the two scripted ones, `pages` pages each, every robots.txt with this Crawl-delay. */
export function startScriptedWeb(options: WebOptions): Promise<TestWeb> {
  const { pages, crawlDelayS } = options;
  return startWithExtraHosts(options, Object.fromEntries(Object.entries(SCRIPTED_HOSTS).map(([host, kind]) => [host, scriptedHost(kind, { pages, crawlDelayS })])));
}

/** Every page a complete crawl of that web finds: the plain host's and the scripted hosts'. */
export function scriptedWebPages(web: TestWeb, pages: number): Set<string> {
  const roots = web.rootUrls();
  const origins = roots.map((root) => new URL(root).origin);
  return new Set([
    ...web.groundTruth([roots[PLAIN_HOST] as string], 'any'),
    ...Object.keys(SCRIPTED_HOSTS).flatMap((h) => scriptedPageUrls(origins[Number(h)] as string, { pages })),
  ]);
}

/** The cross-scripted pair: hosts 1 and 2, each page loading the other's script (host 0 is the unseeded plain host). */
export const CROSS_HOSTS = [1, 2] as const;

/**
 * Two hosts whose pages each load the OTHER host's script (see `crossScriptedHost`), with
 * `pages[i]` pages on `CROSS_HOSTS[i]`, every robots.txt with this Crawl-delay. Seed their roots.
 */
export async function startCrossScriptedWeb(options: { pages: readonly [number, number]; crawlDelayS: number; seed: number }): Promise<TestWeb> {
  const { pages, crawlDelayS, seed } = options;
  let origins: string[] = [];
  const partner = (host: number) => () => origins[host] as string;
  const web = await startWithExtraHosts({ pages: 2, crawlDelayS, seed }, {
    [CROSS_HOSTS[0]]: crossScriptedHost({ pages: pages[0], crawlDelayS, partnerOrigin: partner(CROSS_HOSTS[1]) }),
    [CROSS_HOSTS[1]]: crossScriptedHost({ pages: pages[1], crawlDelayS, partnerOrigin: partner(CROSS_HOSTS[0]) }),
  });
  origins = web.rootUrls().map((root) => new URL(root).origin);
  return web;
}

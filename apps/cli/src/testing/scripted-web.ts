import { scriptedHost, scriptedPageUrls, type ScriptedKind, TestWeb } from '@trawl/testweb';

/** The rendering tests' web: host 0 plain, host 1 a single-page app, host 2 a hybrid site. */
export const SCRIPTED_HOSTS: Readonly<Record<number, ScriptedKind>> = { 1: 'spa', 2: 'hybrid' };
export const PLAIN_HOST = 0;

/**
 * A plain host and the two scripted ones, `pages` pages each, every robots.txt with this
 * Crawl-delay; `baseAddress`: the loopback address of host 0 (the others follow it).
 */
export function startScriptedWeb(options: { pages: number; crawlDelayS: number; seed: number; baseAddress?: string }): Promise<TestWeb> {
  const { pages, crawlDelayS, seed, baseAddress } = options;
  return TestWeb.start({
    ...(baseAddress ? { baseAddress } : {}),
    hosts: 1,
    pagesPerHost: pages,
    linksPerPage: 3,
    crossHostLinks: 0,
    noisyLinks: false,
    latencyMs: { min: 1, max: 5 },
    seed,
    extraHosts: 2,
    robotsTxt: () => `User-agent: *\nCrawl-delay: ${crawlDelayS}\nAllow: /\n`,
    hostHandlers: Object.fromEntries(Object.entries(SCRIPTED_HOSTS).map(([host, kind]) => [host, scriptedHost(kind, { pages, crawlDelayS })])),
  });
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

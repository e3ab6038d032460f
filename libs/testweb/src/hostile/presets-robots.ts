/** Hosts whose robots.txt, meta robots or X-Robots-Tag a crawler must get right. */
import { HUGE_ROBOTS, hugeRobotsTxt } from './bodies.js';
import type { Preset, PresetEnv } from './preset.js';
import { DEADLINE_SLACK_MS, expectation, robotsRoute, skeleton, urls } from './preset.js';
import type { Route } from './site.js';
import { hang, HTML, htmlDoc, htmlRoute, redirectRoute, staticRoute, TEXT } from './site.js';
import type { HostileExpectation } from './types.js';

const page = (title: string, links: readonly string[] = ['/']): Route => htmlRoute(htmlDoc(title, links));

export function robots404(env: PresetEnv): Preset {
  const { routes, plain } = skeleton(env, 'no robots.txt', ['/private/1']);
  routes.set('/robots.txt', staticRoute(404, { 'content-type': TEXT }, 'no robots.txt here\n'));
  routes.set('/private/1', page('not private at all: there are no rules'));
  return {
    site: { routes },
    expectation: expectation(env, {
      mustFetch: urls(env, ['/', ...plain, '/private/1']),
      notes: 'robots.txt is 404: RFC 9309 §2.3.1.3, everything is allowed (/private/1 included).',
    }),
  };
}

/** A host whose pages must all stay unfetched because its robots.txt cannot be had. */
function unreachableRobots(env: PresetEnv, title: string, robots: Route, notes: string, extra: Partial<HostileExpectation> = {}): Preset {
  const { routes, plain } = skeleton(env, title, []);
  routes.set('/robots.txt', robots);
  return {
    site: { routes },
    expectation: expectation(env, { mustNotFetch: urls(env, ['/', ...plain]), robotsDisallow: ['/'], notes, ...extra }),
  };
}

export const robots500 = (env: PresetEnv): Preset =>
  unreachableRobots(
    env,
    'robots.txt is 500',
    staticRoute(500, { 'content-type': TEXT }, 'robots.txt broke\n'),
    'robots.txt is always 500: RFC 9309 §2.3.1.4, the crawler must assume complete disallow; nothing but /robots.txt may be requested.',
  );

export const robotsTimeout = (env: PresetEnv): Preset =>
  unreachableRobots(
    env,
    'robots.txt never answers',
    // Not even headers: the request stays open until the client leaves or the web stops.
    (_req, res, ctx) => hang(res, ctx.signal),
    'robots.txt never answers (no headers): unreachable, so complete disallow (RFC 9309 §2.3.1.4); the crawler must give up on it ' +
      'within its deadline and request nothing else.',
    { limits: [{ url: `${env.origin}/robots.txt`, match: 'exact', maxResponseMs: env.limits.fetchDeadlineMs + DEADLINE_SLACK_MS }] },
  );

export function robotsRedirect(env: PresetEnv): Preset {
  const { routes, plain } = skeleton(env, 'robots.txt redirects', ['/private/1']);
  routes.set('/robots.txt', redirectRoute(301, '/real-robots.txt'));
  routes.set('/real-robots.txt', robotsRoute('User-agent: *\nDisallow: /private/\n'));
  routes.set('/private/1', page('private'));
  return {
    site: { routes },
    expectation: expectation(env, {
      mustFetch: urls(env, ['/', ...plain, '/real-robots.txt']),
      mustNotFetchPrefixes: urls(env, ['/private/']),
      robotsDisallow: ['/private/'],
      notes: '/robots.txt is a 301 to /real-robots.txt (Disallow: /private/): RFC 9309 §2.3.1.2, follow it; /private/ stays unfetched.',
    }),
  };
}

export function robotsHuge(env: PresetEnv): Preset {
  const { routes, plain } = skeleton(env, 'a 600 KiB robots.txt', ['/before/1', '/after/1']);
  routes.set('/robots.txt', robotsRoute(hugeRobotsTxt()));
  routes.set('/before/1', page('disallowed early in robots.txt'));
  routes.set('/after/1', page('disallowed only past 500 KiB'));
  // The late rule counts only for a crawler that parses further than it starts.
  const lateRuleRead = env.limits.robotsMaxBytes > HUGE_ROBOTS.afterOffset;
  return {
    site: { routes },
    expectation: expectation(env, {
      mustFetch: urls(env, ['/', ...plain, ...(lateRuleRead ? [] : ['/after/1'])]),
      mustNotFetch: urls(env, ['/before/1', ...(lateRuleRead ? ['/after/1'] : [])]),
      robotsDisallow: [HUGE_ROBOTS.beforeRule, ...(lateRuleRead ? [HUGE_ROBOTS.afterRule] : [])],
      notes: `robots.txt is ${HUGE_ROBOTS.bytes} bytes: Disallow: ${HUGE_ROBOTS.beforeRule} near the top, Disallow: ${HUGE_ROBOTS.afterRule} at byte ` +
        `${HUGE_ROBOTS.afterOffset}. Parsing the first ${env.limits.robotsMaxBytes} bytes (RFC 9309 §2.5: at least 500 KiB), ` +
        `${lateRuleRead ? 'both rules apply' : `the late rule is ignored and /after/1 must be fetched`}.`,
    }),
  };
}

export function robotsCrawlDelay(env: PresetEnv): Preset {
  const { routes, plain } = skeleton(env, 'Crawl-delay: 2', []);
  routes.set('/robots.txt', robotsRoute('User-agent: *\nCrawl-delay: 2\nAllow: /\n'));
  return {
    site: { routes },
    expectation: expectation(env, {
      mustFetch: urls(env, ['/', ...plain]),
      minIntervalMs: 2000,
      notes: 'robots.txt says Crawl-delay: 2: requests to the host (robots.txt fetches aside) start at least 2000 ms apart.',
    }),
  };
}

export function robotsDisallow(env: PresetEnv): Preset {
  const { routes, plain } = skeleton(env, 'Disallow: /private/', ['/private/1', '/private/2', '/go-private']);
  routes.set('/robots.txt', robotsRoute('User-agent: *\nDisallow: /private/\n'));
  for (const n of [1, 2, 3]) routes.set(`/private/${n}`, page(`private ${n}`));
  routes.set('/go-private', redirectRoute(302, '/private/3'));
  return {
    site: { routes },
    expectation: expectation(env, {
      mustFetch: urls(env, ['/', ...plain]),
      mustRequest: urls(env, ['/go-private']),
      mustNotFetchPrefixes: urls(env, ['/private/']),
      robotsDisallow: ['/private/'],
      notes: 'Disallow: /private/. The root links to /private/1 and /private/2, and to /go-private, an allowed URL that redirects to ' +
        '/private/3: redirect targets are checked against robots.txt too. Nothing under /private/ may be requested.',
    }),
  };
}

export function metaRobots(env: PresetEnv): Preset {
  const token = env.limits.robotsToken;
  const pages = [
    { path: '/meta/nofollow', head: '<meta name="robots" content="nofollow">', follow: false },
    { path: '/meta/noindex', head: '<meta name="robots" content="noindex">', follow: true },
    { path: '/meta/header', header: 'nofollow', follow: false },
    { path: '/meta/token-none', head: `<meta name="${token}" content="none">`, follow: false },
    { path: '/meta/other-bot', head: '<meta name="otherbot" content="nofollow">', follow: true },
  ];
  const { routes, plain } = skeleton(env, 'meta robots', pages.map((p) => p.path));
  const targets = (path: string): string[] => [`${path}/target-1`, `${path}/target-2`];
  for (const p of pages) {
    const headers = { 'content-type': HTML, ...(p.header === undefined ? {} : { 'x-robots-tag': p.header }) };
    routes.set(p.path, htmlRoute(htmlDoc(`${p.path}: ${p.head ?? `X-Robots-Tag: ${p.header}`}`, targets(p.path), { head: p.head ?? '' }), headers));
    for (const target of targets(p.path)) routes.set(target, page(`linked only from ${p.path}`));
  }
  return {
    site: { routes },
    expectation: expectation(env, {
      mustFetch: urls(env, ['/', ...plain, ...pages.map((p) => p.path), ...pages.filter((p) => p.follow).flatMap((p) => targets(p.path))]),
      mustNotFetch: urls(env, pages.filter((p) => !p.follow).flatMap((p) => targets(p.path))),
      notes: 'Targets are linked from one page only. nofollow (meta robots, X-Robots-Tag header, or ' +
        `<meta name="${token}" content="none">) means they are never requested; noindex alone, and directives for another bot, do not stop following.`,
    }),
  };
}

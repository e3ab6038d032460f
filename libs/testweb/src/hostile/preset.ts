/** What every hostile preset is built from, and the parts they share (index page, plain pages, robots.txt). */
import type http from 'node:http';
import { DEFAULT_ROBOTS_TXT } from '../respond.js';
import type { HostileSite, Route } from './site.js';
import { htmlDoc, htmlRoute, staticRoute, TEXT } from './site.js';
import type { CrawlerLimits, HostileExpectation, HostileKind } from './types.js';

/** Tuning of the hostile hosts themselves (HostileWebOptions fills it). */
export interface HostileKnobs {
  seed: number;
  /** Ordinary pages `/a/1…n` on every hostile host, linked from its root. */
  plainPages: number;
  /** Throttled answers per page before the 200 (throttle-*, unavailable-*). */
  throttleRepeats: number;
  retryAfterSeconds: number;
  calendarMaxRequests: number;
  hugePageBytes: number;
  bombInflatedBytes: number;
  /** How long the bomb's response may stay open: a crawler that stops at its body cap closes it at once. */
  bombMaxResponseMs: number;
  tarpitIntervalMs: number;
}

export interface PresetEnv {
  kind: HostileKind;
  hostIndex: number;
  origin: string;
  /** The URL /r/private redirects to, on the private server outside the allowed range. */
  privateUrl: string;
  /** A normal host's page, /r/offsite's target. */
  offsiteUrl: string;
  limits: CrawlerLimits;
  knobs: HostileKnobs;
}

export interface Preset {
  site: HostileSite;
  expectation: HostileExpectation;
}

/**
 * Kernel socket buffers on loopback take a few MB the client never read (measured ≈ 4 MB on
 * Linux with default tcp_wmem); byte bounds on what the server wrote add this much slack.
 */
export const SOCKET_SLACK_BYTES = 6 * 1024 * 1024;
/** Added to the crawler's deadline when bounding how long a response may stay open. */
export const DEADLINE_SLACK_MS = 2000;

export const robotsRoute = (body: string): Route => staticRoute(200, { 'content-type': TEXT }, body);

/** The shared skeleton: `/` links to `links` then the plain pages; `/a/i` links to `/a/i+1` and `/`. */
export function skeleton(env: PresetEnv, title: string, links: readonly string[]): { routes: Map<string, Route>; plain: string[] } {
  const n = env.knobs.plainPages;
  const plain = Array.from({ length: n }, (_, i) => `/a/${i + 1}`);
  const routes = new Map<string, Route>();
  routes.set('/', htmlRoute(htmlDoc(`${env.kind}: ${title}`, [...links, ...plain])));
  plain.forEach((path, i) => routes.set(path, htmlRoute(htmlDoc(`${env.kind} plain page ${i + 1}`, [...(i + 1 < n ? [plain[i + 1] as string] : []), '/']))));
  routes.set('/robots.txt', robotsRoute(DEFAULT_ROBOTS_TXT));
  return { routes, plain };
}

/** An expectation with empty lists, then `fields`. */
export function expectation(env: PresetEnv, fields: Partial<HostileExpectation> & { notes: string }): HostileExpectation {
  return {
    kind: env.kind,
    hostIndex: env.hostIndex,
    origin: env.origin,
    mustFetch: [],
    mustRequest: [],
    mustNotFetch: [],
    mustNotFetchPrefixes: [],
    robotsDisallow: [],
    limits: [],
    notFoundPrefixes: [],
    ...fields,
  };
}

export const urls = (env: PresetEnv, paths: readonly string[]): string[] => paths.map((path) => `${env.origin}${path}`);

/** Wraps every route but robots.txt: the first `repeats` requests of each answer `status` instead. */
export function throttle(
  routes: Map<string, Route>,
  repeats: number,
  status: number,
  retryAfter: ((now: number) => { header: string; notBefore: number }) | null,
): void {
  for (const [key, route] of routes) {
    if (key === '/robots.txt') continue;
    let served = 0;
    routes.set(key, (req: http.IncomingMessage, res: http.ServerResponse, ctx) => {
      if (served++ >= repeats) return route(req, res, ctx);
      const headers: http.OutgoingHttpHeaders = { 'content-type': TEXT };
      const now = Date.now();
      if (retryAfter !== null) {
        const { header, notBefore } = retryAfter(now);
        headers['retry-after'] = header;
        ctx.log({ notBefore, note: `retry-after ${header}` });
      }
      staticRoute(status, headers, `${status === 429 ? 'too many requests' : 'service unavailable'}\n`)(req, res, ctx);
    });
  }
}

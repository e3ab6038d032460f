/** Hosts that misbehave in what they send: traps, redirects, throttling, errors, slow, huge and broken bodies. */
import { gzipBomb } from './gzip-bomb.js';
import { calendarDay, calendarKeys, calendarPage, calendarStart, hugePageLayout, hugePageRoute, tarpitRoute } from './bodies.js';
import { encodedPages } from './encodings.js';
import type { Preset, PresetEnv } from './preset.js';
import { DEADLINE_SLACK_MS, expectation, skeleton, SOCKET_SLACK_BYTES, throttle, urls } from './preset.js';
import type { Route } from './site.js';
import { HTML, htmlDoc, htmlRoute, redirectRoute, staticRoute, streamBody } from './site.js';

export function calendarTrap(env: PresetEnv): Preset {
  const start = calendarKeys(calendarStart(env.knobs.seed));
  const { routes, plain } = skeleton(env, 'an endless calendar', [start.query, start.path]);
  const dynamic = (key: string): Route | null => {
    const day = calendarDay(key);
    return day === null ? null : htmlRoute(calendarPage(key, day));
  };
  return {
    site: { routes, dynamic },
    expectation: expectation(env, {
      mustFetch: urls(env, ['/', ...plain]),
      maxRequests: env.knobs.calendarMaxRequests,
      notes: `Every day links to the day before and after, in both forms (${start.query}, ${start.path}), without end. ` +
        `A crawler must bound it (depth, per-host budget, trap patterns): at most maxRequests requests to the host, and the plain pages still fetched.`,
    }),
  };
}

/** The long chain: /r/long → /r/long/1 → … → /r/long/7 → /r/long/final, eight redirects. */
const LONG_HOPS = 8;
const longUrl = (k: number): string => (k === 0 ? '/r/long' : k === LONG_HOPS ? '/r/long/final' : `/r/long/${k}`);

export function redirects(env: PresetEnv): Preset {
  const starts = ['/r/short', '/r/long', '/r/loop', '/r/private', '/r/offsite'];
  const { routes, plain } = skeleton(env, 'redirects', starts);
  const page = (title: string): Route => htmlRoute(htmlDoc(title, ['/']));
  routes.set('/r/short', redirectRoute(301, `${env.origin}/r/short/1`));
  routes.set('/r/short/1', redirectRoute(302, 'final')); // relative: resolves against /r/short/1
  routes.set('/r/short/final', page('end of the short chain'));
  const statuses = [301, 302, 303, 307, 308];
  for (let k = 0; k < LONG_HOPS; k++) routes.set(longUrl(k), redirectRoute(statuses[k % statuses.length] as number, longUrl(k + 1)));
  routes.set(longUrl(LONG_HOPS), page('end of the long chain'));
  routes.set('/r/loop', redirectRoute(302, '/r/loop/b'));
  routes.set('/r/loop/b', redirectRoute(302, '/r/loop'));
  routes.set('/r/private', redirectRoute(302, env.privateUrl));
  routes.set('/r/offsite', redirectRoute(301, env.offsiteUrl));
  const max = env.limits.maxRedirects;
  // Following at most `max` redirects from /r/long, the crawler may request hops 0…max.
  const beyond = Array.from({ length: LONG_HOPS + 1 }, (_, k) => longUrl(k)).slice(max + 1);
  return {
    site: { routes },
    expectation: expectation(env, {
      mustFetch: urls(env, ['/', ...plain, '/r/short/final', ...(beyond.length === 0 ? [longUrl(LONG_HOPS)] : [])]),
      mustRequest: urls(env, starts),
      mustNotFetch: [...urls(env, beyond), env.privateUrl],
      limits: [{ url: `${env.origin}/r/loop`, match: 'prefix', maxRequests: max + 1 }],
      notes: `/r/short: 301 (absolute) → 302 (relative) → 200, must be fetched. /r/long: ${LONG_HOPS} redirects; with ≤ ${max} followed, ` +
        `${beyond.join(', ') || 'nothing'} must never be requested. /r/loop ↔ /r/loop/b: must end (≤ ${max + 1} requests). ` +
        `/r/private → ${env.privateUrl} (outside the allowed range: the SSRF guard refuses it, the private server's log stays empty). ` +
        `/r/offsite → ${env.offsiteUrl} (a normal host: scope, robots.txt and politeness of that host apply).`,
    }),
  };
}

function throttled(env: PresetEnv, status: 429 | 503, form: 'delta' | 'date' | null): Preset {
  const { routes, plain } = skeleton(env, `${status} before every page`, []);
  const seconds = env.knobs.retryAfterSeconds;
  const retryAfter =
    form === 'delta'
      ? (now: number) => ({ header: String(seconds), notBefore: now + seconds * 1000 })
      : form === 'date'
        ? (now: number) => {
            // An HTTP-date has whole seconds: the next one at least `seconds` ahead.
            const date = Math.ceil((now + seconds * 1000) / 1000) * 1000;
            return { header: new Date(date).toUTCString(), notBefore: date };
          }
        : null;
  throttle(routes, env.knobs.throttleRepeats, status, retryAfter);
  const gap = form === null ? env.limits.minBackoffMs : seconds * 1000;
  const repeats = env.knobs.throttleRepeats;
  return {
    site: { routes },
    expectation: expectation(env, {
      mustFetch: urls(env, ['/', ...plain]),
      ...(gap > 0 ? { minGapAfterStatusMs: { [status]: gap } } : {}),
      ...(form === null ? {} : { retryAfterMs: seconds * 1000 }),
      notes: `The first ${repeats} request(s) of every page but robots.txt get ${status}` +
        (form === 'delta' ? ` with Retry-After: ${seconds}` : form === 'date' ? ` with Retry-After as an HTTP-date ${seconds}–${seconds + 1} s ahead` : ' without Retry-After') +
        ', then 200. Every page must end up fetched; ' +
        (form === null ? `the back-off is the crawler's own${gap > 0 ? ` (≥ ${gap} ms promised)` : ''}.` : 'no request to the host before the Retry-After (the log entry carries notBefore).'),
    }),
  };
}

export const throttle429 = (env: PresetEnv): Preset => throttled(env, 429, 'delta');
export const throttle429Bare = (env: PresetEnv): Preset => throttled(env, 429, null);
export const unavailable503 = (env: PresetEnv): Preset => throttled(env, 503, 'date');
export const unavailable503Bare = (env: PresetEnv): Preset => throttled(env, 503, null);

export function always500(env: PresetEnv): Preset {
  const { routes, plain } = skeleton(env, 'one broken page', ['/broken']);
  routes.set('/broken', staticRoute(500, { 'content-type': HTML }, '<!doctype html>\n<p>Internal error, as always.</p>\n'));
  return {
    site: { routes },
    expectation: expectation(env, {
      mustFetch: urls(env, ['/', ...plain]),
      mustRequest: urls(env, ['/broken']),
      limits: [{ url: `${env.origin}/broken`, match: 'exact', maxRequests: env.limits.attempts }],
      notes: `/broken is always 500: tried at most ${env.limits.attempts} times, then dead-lettered; the rest of the host is unaffected.`,
    }),
  };
}

export function tarpit(env: PresetEnv): Preset {
  const { routes, plain } = skeleton(env, 'a tarpit', ['/tarpit']);
  const interval = env.knobs.tarpitIntervalMs;
  routes.set('/tarpit', tarpitRoute(interval));
  const maxMs = env.limits.fetchDeadlineMs + DEADLINE_SLACK_MS;
  return {
    site: { routes },
    expectation: expectation(env, {
      mustFetch: urls(env, ['/', ...plain]),
      mustRequest: urls(env, ['/tarpit']),
      limits: [{ url: `${env.origin}/tarpit`, match: 'exact', maxRequests: env.limits.attempts, maxResponseMs: maxMs, maxBytesPerResponse: Math.ceil(maxMs / interval) + 1 }],
      notes: `/tarpit sends headers at once, then one byte every ${interval} ms forever: no idle timeout fires, only the crawler's deadline ` +
        `(${env.limits.fetchDeadlineMs} ms) ends it. The rest of the host must still be fetched.`,
    }),
  };
}

export function hugePage(env: PresetEnv): Preset {
  const { routes, plain } = skeleton(env, 'a huge page', ['/huge']);
  const size = env.knobs.hugePageBytes;
  const cap = env.limits.maxBodyBytes;
  const layout = hugePageLayout(size, cap);
  routes.set('/huge', hugePageRoute(size, cap));
  for (const link of [...layout.before, ...layout.after]) routes.set(link.href, htmlRoute(htmlDoc(`linked from the huge page at byte ${link.offset}`, ['/'])));
  const after = layout.after.map((link) => link.href);
  return {
    site: { routes },
    expectation: expectation(env, {
      mustFetch: urls(env, ['/', ...plain, ...layout.before.map((link) => link.href)]),
      mustRequest: urls(env, ['/huge']),
      mustNotFetch: urls(env, after),
      limits: [{ url: `${env.origin}/huge`, match: 'exact', maxRequests: env.limits.attempts, maxResponseMs: env.limits.fetchDeadlineMs + DEADLINE_SLACK_MS }],
      notes: `/huge is ${size} bytes of HTML (Content-Length given). Links before the ${cap}-byte cap (${layout.before.map((l) => `${l.href}@${l.offset}`).join(', ')}) ` +
        `must be fetched: the truncated body is kept and parsed. Links after it (${layout.after.map((l) => `${l.href}@${l.offset}`).join(', ')}) were never read and must not be.`,
    }),
  };
}

export function gzipBombHost(env: PresetEnv): Preset {
  const { routes, plain } = skeleton(env, 'a decompression bomb', ['/bomb']);
  const bomb = gzipBomb(env.knobs.bombInflatedBytes);
  routes.set('/bomb', async (req, res, ctx) => {
    res.writeHead(200, { 'content-type': HTML, 'content-encoding': 'gzip', 'content-length': bomb.compressedBytes });
    if (req.method === 'HEAD') res.end();
    else await streamBody(res, ctx.signal, bomb.chunks());
  });
  routes.set('/bomb/survived', htmlRoute(htmlDoc('linked from inside the bomb', ['/'])));
  const maxBytes = SOCKET_SLACK_BYTES + 2 * 1024 * 1024;
  return {
    site: { routes },
    expectation: expectation(env, {
      mustFetch: urls(env, ['/', ...plain]),
      mustRequest: urls(env, ['/bomb']),
      limits: [{ url: `${env.origin}/bomb`, match: 'exact', maxRequests: env.limits.attempts, maxBytesPerResponse: maxBytes, maxResponseMs: env.knobs.bombMaxResponseMs }],
      notes: `/bomb is ${bomb.compressedBytes} bytes of gzip inflating to ${bomb.inflatedBytes}. A crawler stops inflating at its ` +
        `${env.limits.maxBodyBytes}-byte cap (~${Math.ceil((env.limits.maxBodyBytes * bomb.compressedBytes) / bomb.inflatedBytes / 1024)} KiB on the wire) and closes: the server can hand the socket ` +
        `at most ${maxBytes} bytes (socket buffers included) and the response closes within ${env.knobs.bombMaxResponseMs} ms. ` +
        '/bomb/survived, linked from the first inflated bytes, may be fetched or not.',
    }),
  };
}

export function encodings(env: PresetEnv): Preset {
  const pages = encodedPages();
  const { routes, plain } = skeleton(env, 'charsets', pages.map((p) => p.path));
  for (const page of pages) {
    routes.set(page.path, htmlRoute(page.body, { 'content-type': page.contentType }));
    for (const target of page.targets) routes.set(target, htmlRoute(htmlDoc(`decoded right: ${decodeURI(target)}`, ['/'])));
  }
  return {
    site: { routes },
    expectation: expectation(env, {
      mustFetch: urls(env, ['/', ...plain, ...pages.flatMap((p) => [p.path, ...p.targets])]),
      notFoundPrefixes: [`${env.origin}/enc/`],
      notes: `Each page links to a path that exists only when decoded with the right charset; under /enc/ a 404 means a mis-decoded link. ` +
        pages.map((p) => `${p.path}: ${p.note} → ${p.targets.join(', ')}`).join('; '),
    }),
  };
}

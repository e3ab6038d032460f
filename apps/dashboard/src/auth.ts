import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { bearerToken, type TokenSet } from '@trawl/core';
import { SIGNATURE_DIRECTORY_PATH } from '@trawl/fetch';
import fastifyCookie from '@fastify/cookie';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, type Caller, escapeHtml, sendProblem, wantsHtml } from './http.js';
import type { SessionStore } from './sessions.js';

export const SESSION_COOKIE = 'trawl_session';
const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const SIGN_OUT = new Set(['/signout', '/signout/everywhere']);

export interface AuthOptions {
  tokens: TokenSet;
  /** Ids of the read-only tokens among `tokens`. */
  readOnlyIds: ReadonlySet<string>;
  /** The tokens themselves, only to derive the session-signing key. */
  secrets: readonly string[];
  sessionTtlMs: number;
  /** /metrics answers without credentials. */
  metricsOpen: boolean;
  /** The sessions still signed in (a cookie outside it is refused). */
  sessions: SessionStore;
  now: () => number;
}

/**
 * The key session cookies are signed with (HMAC-SHA256), derived from the API tokens: every
 * dashboard replica with the same tokens accepts the same sessions, and changing the tokens
 * ends every session.
 */
export const sessionKey = (secrets: readonly string[]): Buffer =>
  createHash('sha256').update(`trawl-session-v1\0${[...secrets].sort().join('\0')}`).digest();

interface Session {
  /** Token id the browser signed in with. */
  t: string;
  /** Expiry, epoch ms. */
  exp: number;
  /** CSRF token of this session. */
  c: string;
  /** Session id: the session is open while the session store holds it. */
  s: string;
}

/** Same-origin by Fetch Metadata (`Sec-Fetch-Site`), else by `Origin`; neither present: refused. */
export function sameOrigin(request: FastifyRequest): boolean {
  const site = request.headers['sec-fetch-site'];
  if (typeof site === 'string') return site === 'same-origin';
  const origin = request.headers.origin;
  if (typeof origin === 'string') return origin === `${request.protocol}://${request.headers.host}`;
  return false;
}

const safeEqual = (a: string, b: string): boolean => {
  const x = createHash('sha256').update(a).digest();
  const y = createHash('sha256').update(b).digest();
  return timingSafeEqual(x, y) && a.length > 0;
};

/** Failed sign-ins and bad tokens per client address: a fixed one-minute window, bounded in size. */
class FailureLimiter {
  private window = 0;
  private counts = new Map<string, number>();

  constructor(
    private readonly max: number,
    private readonly now: () => number,
  ) {}

  private roll(): void {
    const window = Math.floor(this.now() / 60_000);
    if (window !== this.window || this.counts.size > 10_000) {
      this.window = window;
      this.counts.clear();
    }
  }

  blocked(ip: string): boolean {
    this.roll();
    return (this.counts.get(ip) ?? 0) >= this.max;
  }

  fail(ip: string): void {
    this.roll();
    this.counts.set(ip, (this.counts.get(ip) ?? 0) + 1);
  }
}

const isPublic = (path: string, method: string, metricsOpen: boolean): boolean =>
  path === '/healthz' || path === '/signin' || path === SIGNATURE_DIRECTORY_PATH || (metricsOpen && path === '/metrics' && (method === 'GET' || method === 'HEAD'));

/** A relative path on this server to go back to after signing in (never another site). */
export const safeNext = (next: unknown): string => (typeof next === 'string' && /^\/(?![/\\])[\x21-\x7e]*$/.test(next) ? next : '/');

/**
 * Authentication for every route but /healthz (and /metrics when open): `Authorization: Bearer`
 * with one of the tokens, or the signed session cookie a browser gets by signing in with one.
 * Browser writes (cookie-authenticated POST/PUT/PATCH/DELETE) must be same-origin (Fetch
 * Metadata or Origin) and, outside bull-board, carry the session's CSRF token in `X-CSRF-Token`
 * or a `_csrf` form field. Bearer requests carry no ambient credential, so they need neither.
 */
export async function registerAuth(app: FastifyInstance, options: AuthOptions): Promise<void> {
  const key = sessionKey(options.secrets);
  await app.register(fastifyCookie, { secret: key, hook: 'onRequest' });
  const failures = new FailureLimiter(30, options.now);

  const readSession = async (request: FastifyRequest): Promise<Caller | null> => {
    const raw = request.cookies[SESSION_COOKIE];
    if (!raw) return null;
    const unsigned = request.unsignCookie(raw);
    if (!unsigned.valid || unsigned.value === null) return null;
    let session: Session;
    try {
      session = JSON.parse(Buffer.from(unsigned.value, 'base64url').toString('utf8')) as Session;
    } catch {
      return null;
    }
    if (typeof session.exp !== 'number' || session.exp <= options.now() || typeof session.s !== 'string' || !options.tokens.hasId(session.t)) return null;
    if (!(await options.sessions.isOpen(session.t, session.s))) return null;
    return { tokenId: session.t, via: 'session', csrf: session.c, sessionId: session.s, readOnly: options.readOnlyIds.has(session.t) };
  };

  // Only failures are counted, and only a wrong credential is ever refused for them: a valid token
  // or session always gets in, so nobody can lock the operators out by failing from their address
  // (behind a proxy, set TRAWL_TRUST_PROXY, or every client shares the proxy's address).
  const refuseBadToken = (request: FastifyRequest, reply: FastifyReply) => {
    if (failures.blocked(request.ip)) return sendProblem(request, reply, 429, 'ERR_RATE_LIMITED', 'too many failed authentications from this address; try again in a minute');
    failures.fail(request.ip);
    reply.header('www-authenticate', 'Bearer realm="trawl", error="invalid_token"');
    return sendProblem(request, reply, 401, 'ERR_UNAUTHORIZED', 'invalid credentials');
  };

  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0] as string;
    if (isPublic(path, request.method, options.metricsOpen)) return;
    if (request.headers.authorization !== undefined) {
      const id = options.tokens.verify(bearerToken(request.headers.authorization));
      if (id === null) return refuseBadToken(request, reply);
      request.caller = { tokenId: id, via: 'bearer', readOnly: options.readOnlyIds.has(id) };
      return;
    }
    const session = await readSession(request);
    if (session) {
      request.caller = session;
      return;
    }
    if ((request.method === 'GET' || request.method === 'HEAD') && wantsHtml(request)) return reply.redirect(`/signin?next=${encodeURIComponent(request.url)}`, 303);
    reply.header('www-authenticate', 'Bearer realm="trawl"');
    return sendProblem(request, reply, 401, 'ERR_UNAUTHORIZED', 'sign in, or send Authorization: Bearer <token>');
  });

  app.addHook('preHandler', async (request: FastifyRequest) => {
    const caller = request.caller;
    // A read-only token reads; signing itself out is all it may write.
    if (caller?.readOnly && !['GET', 'HEAD', 'OPTIONS'].includes(request.method) && !SIGN_OUT.has(request.url.split('?')[0] as string)) {
      throw new ApiError(403, 'ERR_READ_ONLY', 'this token is read-only (TRAWL_API_READ_TOKENS): it cannot write');
    }
    if (!caller || caller.via !== 'session' || !UNSAFE.has(request.method)) return;
    if (!sameOrigin(request)) throw new ApiError(403, 'ERR_CSRF', 'cross-site request refused');
    const path = request.url.split('?')[0] as string;
    // bull-board's own UI cannot send our token; for it, the same-origin check is the defence.
    if (path.startsWith('/queues/')) return;
    const header = request.headers['x-csrf-token'];
    const field = (request.body as { _csrf?: unknown } | undefined)?._csrf;
    const given = typeof header === 'string' ? header : typeof field === 'string' ? field : '';
    if (!safeEqual(given, caller.csrf ?? '')) throw new ApiError(403, 'ERR_CSRF', 'missing or wrong CSRF token');
  });

  app.get('/signin', async (request, reply) => {
    const next = safeNext((request.query as { next?: unknown }).next);
    return reply.type('text/html; charset=utf-8').send(signInPage(next, null));
  });

  app.post('/signin', async (request, reply) => {
    const form = (request.body ?? {}) as { token?: unknown; next?: unknown };
    const next = safeNext(form.next);
    // Signing in from another site (login CSRF) is refused like any cross-site write.
    if (!sameOrigin(request)) return sendProblem(request, reply, 403, 'ERR_CSRF', 'cross-site request refused');
    const id = options.tokens.verify(typeof form.token === 'string' ? form.token.trim() : '');
    if (id === null) {
      if (failures.blocked(request.ip)) return reply.code(429).type('text/html; charset=utf-8').send(signInPage(next, 'Too many failed attempts; wait a minute.'));
      failures.fail(request.ip);
      return reply.code(401).type('text/html; charset=utf-8').send(signInPage(next, 'That token is not valid.'));
    }
    const session: Session = { t: id, exp: options.now() + options.sessionTtlMs, c: randomBytes(18).toString('base64url'), s: randomBytes(18).toString('base64url') };
    await options.sessions.open(id, session.s, session.exp, options.now());
    const value = reply.signCookie(Buffer.from(JSON.stringify(session)).toString('base64url'));
    reply.setCookie(SESSION_COOKIE, value, {
      httpOnly: true,
      sameSite: 'strict',
      path: '/',
      maxAge: Math.floor(options.sessionTtlMs / 1000),
      // https as the client sees it: behind a TLS proxy, its X-Forwarded-Proto (TRAWL_TRUST_PROXY).
      secure: request.protocol === 'https',
    });
    return reply.redirect(next, 303);
  });

  // Signing out ends the session on the server too: the cookie, even a copy of it, no longer works.
  app.post('/signout', async (request, reply) => {
    const caller = request.caller;
    if (caller?.via === 'session' && caller.sessionId !== undefined) await options.sessions.close(caller.tokenId, caller.sessionId);
    reply.clearCookie(SESSION_COOKIE, { path: '/' });
    return reply.redirect('/signin', 303);
  });

  // Every browser signed in with the caller's token, everywhere (a lost laptop, a shared machine).
  app.post('/signout/everywhere', async (request, reply) => {
    const caller = request.caller as Caller;
    const closed = await options.sessions.closeAll(caller.tokenId);
    if (caller.via === 'bearer') return { closed };
    reply.clearCookie(SESSION_COOKIE, { path: '/' });
    return reply.redirect('/signin', 303);
  });
}

function signInPage(next: string, error: string | null): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>trawl — sign in</title>
<style>body{font:15px/1.4 system-ui,sans-serif;background:#f4f5f7;color:#1d2430;display:grid;place-items:center;min-height:90vh;margin:0}
form{background:#fff;padding:2rem 2.2rem;border-radius:10px;box-shadow:0 2px 12px #0002;width:min(90vw,380px)}
h1{font-size:1.3rem;margin:0 0 1rem}label{display:block;margin-bottom:.4rem}input[type=password]{width:100%;box-sizing:border-box;padding:.55rem;border:1px solid #bbb;border-radius:6px;font:inherit}
button{margin-top:1rem;padding:.55rem 1.2rem;border:0;border-radius:6px;background:#2456c7;color:#fff;font:inherit;cursor:pointer}.error{color:#b3261e;margin:.6rem 0 0}</style></head>
<body><form method="post" action="/signin">
<h1>trawl dashboard</h1>
<label for="token">API token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
<input type="hidden" name="next" value="${escapeHtml(next)}">
${error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : ''}
<button type="submit">Sign in</button>
</form></body></html>`;
}

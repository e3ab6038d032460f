/**
 * Telling a host that refuses this crawler from one that is only slow. A slow host (timeouts,
 * rising response times, 429 or 503 with Retry-After) is backed off by the politeness model; a
 * host that refuses (403s, 429s without Retry-After, challenge pages, connections reset at once)
 * does not get better by waiting: once it has refused `threshold` times in a row it is judged
 * blocked, and the crawl moves it to its next proxy tier, or pauses it when none is left. Pure.
 */

/** A response or failure that looks like a refusal: its kind, and what it was, for the host's pause reason and the logs. */
export interface BlockSignal {
  kind: BlockSignalKind;
  detail: string;
}

/** What made a response or a failure look like a refusal. */
export type BlockSignalKind =
  /** 403, or 429 without Retry-After. */
  | 'status'
  /** A bot-challenge page (a WAF's "checking your browser", a CAPTCHA), whatever its status. */
  | 'challenge'
  /** A redirect to a challenge or CAPTCHA URL. */
  | 'challenge-redirect'
  /** The connection was reset before any response, at once. */
  | 'reset';

export interface BlockOptions {
  /** Refusals in a row (nothing else from the host between them) that make a host blocked. 0: never judged blocked. */
  threshold: number;
  /** Lower-case substrings of a body's first BODY_SCAN_BYTES that mark a challenge page. */
  bodyMarkers: readonly string[];
  /** Lower-case substrings of a redirect's target that mark a challenge URL. */
  urlMarkers: readonly string[];
}

/**
 * Markers of the challenge pages of the common bot walls (Cloudflare, Imperva/Incapsula,
 * PerimeterX, DataDome, Akamai, Sucuri, DDoS-Guard, AWS WAF). Each is specific to the wall's own
 * challenge, not to scripts the wall also puts on ordinary pages.
 */
export const DEFAULT_BLOCK_BODY_MARKERS: readonly string[] = Object.freeze([
  'cf-browser-verification',
  'window._cf_chl_opt',
  '<title>just a moment...</title>',
  '<title>attention required! | cloudflare</title>',
  '_incapsula_resource',
  'px-captcha',
  'captcha-delivery.com',
  '/_sec/cp_challenge',
  'sucuri website firewall - access denied',
  'check.ddos-guard.net',
  'awswafcookiedomainlist',
]);

/** Where the common bot walls redirect a client they challenge. */
export const DEFAULT_BLOCK_URL_MARKERS: readonly string[] = Object.freeze([
  '/cdn-cgi/challenge-platform/',
  'captcha-delivery.com',
  '/_incapsula_resource',
  'validate.perfdrive.com',
  '/sorry/index',
  '/_sec/cp_challenge',
]);

export const DEFAULT_BLOCK_THRESHOLD = 3;

/** How much of a body is searched for markers: challenge pages are small, and put them early. */
export const BODY_SCAN_BYTES = 16_384;

/** A connection reset this soon after the request started, with no response, is a refusal; later it is a network fault. */
export const RESET_AT_ONCE_MS = 1000;

/** What a response says: a refusal, or null. */
export function blockSignalOfResponse(
  response: { status: number; retryAfter: string | undefined; location: string | null; body: Buffer | Uint8Array | null },
  options: Pick<BlockOptions, 'bodyMarkers' | 'urlMarkers'>,
): BlockSignal | null {
  const { status } = response;
  if (response.location !== null && status >= 300 && status < 400) {
    const marker = firstOf(response.location.toLowerCase(), options.urlMarkers);
    if (marker !== null) return { kind: 'challenge-redirect', detail: `HTTP ${status} to a challenge URL (${JSON.stringify(marker)})` };
  }
  if (response.body !== null && response.body.length > 0 && options.bodyMarkers.length > 0) {
    const head = Buffer.from(response.body.buffer, response.body.byteOffset, Math.min(response.body.length, BODY_SCAN_BYTES));
    const marker = firstOf(head.toString('latin1').toLowerCase(), options.bodyMarkers);
    if (marker !== null) return { kind: 'challenge', detail: `a challenge page (HTTP ${status}, ${JSON.stringify(marker)})` };
  }
  if (status === 403) return { kind: 'status', detail: 'HTTP 403' };
  if (status === 429 && (response.retryAfter === undefined || response.retryAfter.trim() === '')) return { kind: 'status', detail: 'HTTP 429 without Retry-After' };
  return null;
}

/** What a failed request says: a connection reset at once (`errno` ECONNRESET or EPIPE) is a refusal. */
export function blockSignalOfFailure(errno: unknown, elapsedMs: number): BlockSignal | null {
  if ((errno === 'ECONNRESET' || errno === 'EPIPE') && elapsedMs <= RESET_AT_ONCE_MS) return { kind: 'reset', detail: `connection reset after ${Math.round(elapsedMs)} ms` };
  return null;
}

function firstOf(text: string, markers: readonly string[]): string | null {
  for (const marker of markers) if (marker !== '' && text.includes(marker)) return marker;
  return null;
}

/** A host's refusals, kept in Redis beside its health. */
export interface BlockState {
  /** Refusals in a row. */
  blocks: number;
  /** Steps above its planned proxy tier the host has been moved (never lowered within a crawl). */
  level: number;
}

export type BlockVerdict =
  /** Not (or no longer) blocked: keep the host where it is. */
  | { kind: 'fine'; state: BlockState }
  /** Blocked: move the host one tier up; its refusal run starts again there. */
  | { kind: 'escalate'; state: BlockState; reason: string }
  /** Blocked and no tier is left to move to: pause the host. */
  | { kind: 'pause'; state: BlockState; reason: string };

/**
 * The host's next block state after one response or failure (`signal` null: a definite answer
 * that is not a refusal, which ends any run). `canEscalate`: a tier above the host's current one
 * exists. A host that has no tier to move to is paused only when the refusal is unmistakable: it
 * was moved up before and the last tier refuses too, or the run is of challenge pages; plain
 * 403s and 429s on a crawl without proxies are answers (recorded) and throttling (backed off).
 */
export function nextBlockState(previous: BlockState, signal: BlockSignal | null, canEscalate: boolean, options: Pick<BlockOptions, 'threshold'>): BlockVerdict {
  if (signal === null) return { kind: 'fine', state: previous.blocks === 0 ? previous : { blocks: 0, level: previous.level } };
  const blocks = previous.blocks + 1;
  if (options.threshold === 0 || blocks < options.threshold) return { kind: 'fine', state: { blocks, level: previous.level } };
  const reason = `blocked: ${blocks} refusals in a row, the last: ${signal.detail}`;
  if (canEscalate) return { kind: 'escalate', state: { blocks: 0, level: previous.level + 1 }, reason };
  const unmistakable = previous.level > 0 || signal.kind === 'challenge' || signal.kind === 'challenge-redirect';
  if (unmistakable) return { kind: 'pause', state: { blocks, level: previous.level }, reason };
  return { kind: 'fine', state: { blocks, level: previous.level } };
}

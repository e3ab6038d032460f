import { describe, expect, it } from 'vitest';
import {
  type BlockSignal,
  blockSignalOfFailure,
  blockSignalOfResponse,
  BODY_SCAN_BYTES,
  DEFAULT_BLOCK_BODY_MARKERS,
  DEFAULT_BLOCK_URL_MARKERS,
  nextBlockState,
} from './block.js';

const markers = { bodyMarkers: DEFAULT_BLOCK_BODY_MARKERS, urlMarkers: DEFAULT_BLOCK_URL_MARKERS };
const response = (status: number, extra: { retryAfter?: string; location?: string; body?: string } = {}) =>
  blockSignalOfResponse({ status, retryAfter: extra.retryAfter, location: extra.location ?? null, body: extra.body === undefined ? null : Buffer.from(extra.body) }, markers);

describe('blockSignalOfResponse', () => {
  it('calls 403 and a 429 without Retry-After refusals, a 429 with one throttling', () => {
    expect(response(403)?.kind).toBe('status');
    expect(response(429)?.detail).toBe('HTTP 429 without Retry-After');
    expect(response(429, { retryAfter: '30' })).toBeNull();
    expect(response(503)).toBeNull();
    expect(response(404)).toBeNull();
    expect(response(200, { body: '<html><title>Forbidden fruit</title>403 reasons</html>' })).toBeNull();
  });

  it('finds a challenge page by its markers, case-insensitively and whatever its status', () => {
    const cloudflare = '<!DOCTYPE html><html><head><title>Just a moment...</title></head><body><script>window._cf_chl_opt={cvId:"3"}</script></body></html>';
    expect(response(503, { body: cloudflare })).toEqual({ kind: 'challenge', detail: 'a challenge page (HTTP 503, "window._cf_chl_opt")' });
    expect(response(200, { body: '<div id="px-captcha"></div>' })?.kind).toBe('challenge');
    expect(response(403, { body: '<TITLE>Attention Required! | Cloudflare</TITLE>' })?.kind).toBe('challenge');
  });

  it('reads only the head of a body: a marker deep in a long page is not a challenge', () => {
    const deep = `${'x'.repeat(BODY_SCAN_BYTES)}<div id="px-captcha"></div>`;
    expect(response(200, { body: deep })).toBeNull();
  });

  it('knows a redirect to a challenge URL, and only a redirect', () => {
    expect(response(302, { location: 'https://example.com/cdn-cgi/challenge-platform/h/b/orchestrate' })?.kind).toBe('challenge-redirect');
    expect(response(302, { location: 'https://geo.captcha-delivery.com/captcha/?initialCid=1' })?.kind).toBe('challenge-redirect');
    expect(response(302, { location: 'https://example.com/login' })).toBeNull();
    expect(response(200, { location: '/cdn-cgi/challenge-platform/' })).toBeNull();
  });

  it('takes custom markers (empty ones never match)', () => {
    const custom = { bodyMarkers: ['', 'our-wall'], urlMarkers: [''] };
    expect(blockSignalOfResponse({ status: 200, retryAfter: undefined, location: null, body: Buffer.from('<p>OUR-WALL says no</p>') }, custom)?.kind).toBe('challenge');
    expect(blockSignalOfResponse({ status: 200, retryAfter: undefined, location: null, body: Buffer.from('<p>fine</p>') }, custom)).toBeNull();
    expect(blockSignalOfResponse({ status: 301, retryAfter: undefined, location: '/elsewhere', body: null }, custom)).toBeNull();
  });
});

describe('blockSignalOfFailure', () => {
  it('calls a reset at once a refusal, a late reset or another error a fault', () => {
    expect(blockSignalOfFailure('ECONNRESET', 12)).toEqual({ kind: 'reset', detail: 'connection reset after 12 ms' });
    expect(blockSignalOfFailure('EPIPE', 900)?.kind).toBe('reset');
    expect(blockSignalOfFailure('ECONNRESET', 4000)).toBeNull();
    expect(blockSignalOfFailure('ECONNREFUSED', 3)).toBeNull();
    expect(blockSignalOfFailure(undefined, 3)).toBeNull();
  });
});

describe('nextBlockState', () => {
  const forbidden: BlockSignal = { kind: 'status', detail: 'HTTP 403' };
  const challenge: BlockSignal = { kind: 'challenge', detail: 'a challenge page' };
  const threshold = { threshold: 3 };

  it('escalates after the threshold of refusals in a row, and starts counting again there', () => {
    let state = { blocks: 0, level: 0 };
    const verdicts: string[] = [];
    for (let i = 0; i < 3; i++) {
      const verdict = nextBlockState(state, forbidden, true, threshold);
      verdicts.push(verdict.kind);
      state = verdict.state;
    }
    expect(verdicts).toEqual(['fine', 'fine', 'escalate']);
    expect(state).toEqual({ blocks: 0, level: 1 });
    const escalated = nextBlockState({ blocks: 2, level: 0 }, forbidden, true, threshold);
    expect(escalated.kind === 'escalate' && escalated.reason).toBe('blocked: 3 refusals in a row, the last: HTTP 403');
  });

  it('ends a run on any other answer, keeping the tier', () => {
    expect(nextBlockState({ blocks: 2, level: 1 }, null, true, threshold)).toEqual({ kind: 'fine', state: { blocks: 0, level: 1 } });
    const fresh = { blocks: 0, level: 0 };
    expect(nextBlockState(fresh, null, true, threshold).state).toBe(fresh);
  });

  it('with no tier left, pauses only an unmistakable refusal', () => {
    // No proxies at all: a run of 403s is the site's answer, never a pause.
    expect(nextBlockState({ blocks: 5, level: 0 }, forbidden, false, threshold)).toEqual({ kind: 'fine', state: { blocks: 6, level: 0 } });
    // Challenge pages: the site answers nobody but browsers.
    expect(nextBlockState({ blocks: 2, level: 0 }, challenge, false, threshold).kind).toBe('pause');
    // Moved up before, and the last tier refuses too.
    const paused = nextBlockState({ blocks: 2, level: 2 }, forbidden, false, threshold);
    expect(paused).toEqual({ kind: 'pause', state: { blocks: 3, level: 2 }, reason: 'blocked: 3 refusals in a row, the last: HTTP 403' });
  });

  it('never judges a host blocked with threshold 0', () => {
    expect(nextBlockState({ blocks: 99, level: 0 }, challenge, true, { threshold: 0 }).kind).toBe('fine');
  });
});

import { ErrorCode, TrawlError } from '@trawl/core';
import { describe, expect, it } from 'vitest';
import { DEFAULT_POLITENESS, type PolitenessOptions } from './delay.js';
import { type FetchOutcomeKind, HEALTHY, type HostHealth, nextHealth, outcomeOfError, outcomeOfStatus } from './health.js';

const options: PolitenessOptions = { ...DEFAULT_POLITENESS, minDelayMs: 1000, backoffBaseMs: 5000, backoffMaxMs: 600_000, hostFailureThreshold: 3 };
const noJitter = () => 0.5; // factor exactly 1

describe('nextHealth', () => {
  it.each<[string, HostHealth, FetchOutcomeKind, HostHealth]>([
    ['healthy stays healthy on success', HEALTHY, 'success', HEALTHY],
    ['first failure: base back-off', HEALTHY, 'error', { streak: 1, backoffMs: 5000 }],
    ['second failure doubles', { streak: 1, backoffMs: 5000 }, 'throttled', { streak: 2, backoffMs: 10_000 }],
    ['fifth failure: 16 × base', { streak: 4, backoffMs: 40_000 }, 'error', { streak: 5, backoffMs: 80_000 }],
    ['capped at backoffMax', { streak: 20, backoffMs: 600_000 }, 'error', { streak: 21, backoffMs: 600_000 }],
    ['a success halves the back-off and resets the streak', { streak: 5, backoffMs: 80_000 }, 'success', { streak: 0, backoffMs: 40_000 }],
    ['back-off under the minimum delay is dropped', { streak: 0, backoffMs: 1500 }, 'success', HEALTHY],
    // URL-local failures.
    ['a URL-local failure counts but does not back the host off', HEALTHY, 'url-error', { streak: 1, backoffMs: 0 }],
    ['a second one in a row neither', { streak: 1, backoffMs: 0 }, 'url-error', { streak: 2, backoffMs: 0 }],
    ['the third in a row is the host\'s: back-off as for the third failure', { streak: 2, backoffMs: 0 }, 'url-error', { streak: 3, backoffMs: 20_000 }],
    ['it keeps a back-off the host already has', { streak: 0, backoffMs: 20_000 }, 'url-error', { streak: 1, backoffMs: 20_000 }],
    ['after a host-wide failure it continues the streak', { streak: 1, backoffMs: 5000 }, 'url-error', { streak: 2, backoffMs: 5000 }],
    ['a host-wide failure after URL-local ones backs off by the whole streak', { streak: 2, backoffMs: 0 }, 'error', { streak: 3, backoffMs: 20_000 }],
    ['a success after URL-local failures resets the streak', { streak: 2, backoffMs: 0 }, 'success', HEALTHY],
  ])('%s', (_name, previous, outcome, expected) => {
    expect(nextHealth(previous, outcome, options, noJitter)).toEqual(expected);
  });

  it('with threshold 1, a URL-local failure backs off like any other', () => {
    const strict = { ...options, hostFailureThreshold: 1 };
    expect(nextHealth(HEALTHY, 'url-error', strict, noJitter)).toEqual(nextHealth(HEALTHY, 'error', strict, noJitter));
  });

  it('a tarpit URL among pages that answer never backs its host off', () => {
    // Each try of the tarpit times out; the host's other pages answer between the tries.
    let health = HEALTHY;
    for (const outcome of ['success', 'url-error', 'success', 'success', 'url-error', 'success', 'url-error'] as const) {
      health = nextHealth(health, outcome, options, noJitter);
      expect(health.backoffMs).toBe(0);
    }
  });

  it('recovers gradually: successes after a bad spell step the back-off down', () => {
    let health = HEALTHY;
    for (let i = 0; i < 6; i += 1) health = nextHealth(health, 'error', options, noJitter);
    const steps: number[] = [];
    while (health.backoffMs > 0) {
      health = nextHealth(health, 'success', options, noJitter);
      steps.push(health.backoffMs);
    }
    expect(steps).toEqual([80_000, 40_000, 20_000, 10_000, 5000, 2500, 1250, 0]);
  });

  it('jitters within ±25 %', () => {
    expect(nextHealth(HEALTHY, 'error', options, () => 0).backoffMs).toBe(3750);
    expect(nextHealth(HEALTHY, 'error', options, () => 0.999999).backoffMs).toBe(6250);
  });

  it('never shortens a back-off on another failure, whatever the jitter', () => {
    expect(nextHealth({ streak: 1, backoffMs: 9000 }, 'error', options, () => 0).backoffMs).toBe(9000);
  });
});

describe('outcomeOfStatus', () => {
  it.each<[number, FetchOutcomeKind]>([
    [200, 'success'],
    [204, 'success'],
    [301, 'success'],
    [304, 'success'],
    [403, 'success'],
    [404, 'success'],
    [410, 'success'],
    [501, 'success'],
    [505, 'success'],
    [429, 'throttled'],
    [503, 'throttled'],
    [502, 'error'],
    [504, 'error'],
    [500, 'url-error'],
    [507, 'url-error'],
    [599, 'url-error'],
    [408, 'url-error'],
    [425, 'url-error'],
  ])('%i → %s', (status, expected) => {
    expect(outcomeOfStatus(status)).toBe(expected);
  });
});

describe('outcomeOfError', () => {
  // Shaped as the fetcher raises them: code, action, and the timeout phase or errno in details.
  const timeout = (phase?: string) => new TrawlError(ErrorCode.FetchTimeout, 'timed out', { action: 'retry', details: phase === undefined ? undefined : { phase } });
  const network = (action: 'retry' | 'fail' | 'skip', details: Record<string, unknown>) => new TrawlError(ErrorCode.FetchNetwork, 'failed', { action, details });
  it.each<[string, unknown, FetchOutcomeKind]>([
    ['the total deadline (a tarpit)', timeout('request'), 'url-error'],
    ['no response headers in time', timeout('response'), 'url-error'],
    ['an idle socket mid-body', timeout('socket'), 'url-error'],
    ["the caller's deadline", timeout('caller'), 'url-error'],
    ['a timeout of unknown phase', timeout(), 'url-error'],
    ['a TCP connect timeout', timeout('connect'), 'error'],
    ['a DNS lookup timeout', timeout('lookup'), 'error'],
    ['a TLS handshake timeout', timeout('secureConnect'), 'error'],
    ['sending the request timed out', timeout('send'), 'error'],
    ['connection refused', network('retry', { errno: 'ECONNREFUSED' }), 'error'],
    ['connection reset', network('retry', { errno: 'ECONNRESET' }), 'error'],
    ['a transient DNS failure', network('retry', { errno: 'ESERVFAIL', dns: true }), 'error'],
    ['a response cut short', network('retry', { errno: 'ERR_STREAM_PREMATURE_CLOSE' }), 'error'],
    ['a malformed response', network('fail', { errno: 'HPE_INVALID_CONSTANT' }), 'url-error'],
    ['a bad certificate', network('fail', { errno: 'CERT_HAS_EXPIRED' }), 'url-error'],
    ['no such host', network('skip', { errno: 'ENOTFOUND', dns: true }), 'url-error'],
    ['an SSRF refusal', new TrawlError('ERR_SSRF_BLOCKED' as ErrorCode, 'refused', { action: 'skip' }), 'url-error'],
    ['an unknown error', new Error('boom'), 'error'],
    ['not even an error', 'boom', 'error'],
  ])('%s → %s', (_name, error, expected) => {
    expect(outcomeOfError(error)).toBe(expected);
  });
});

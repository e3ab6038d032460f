import { ConfigError, loadConfig } from '@trawl/config';
import { describe, expect, it } from 'vitest';
import { isLoopback, metricsAuthorizer } from './metrics.js';

const TOKEN = 'metrics-token-0123456789';

describe('isLoopback', () => {
  it.each([
    ['127.0.0.1', true],
    ['127.8.9.10', true],
    ['localhost', true],
    ['::1', true],
    ['[::1]', true],
    ['0.0.0.0', false],
    ['::', false],
    ['10.0.0.5', false],
    ['example.com', false],
  ])('%s → %s', (host, loopback) => {
    expect(isLoopback(host)).toBe(loopback);
  });
});

describe('metricsAuthorizer', () => {
  it('needs a token when tokens are configured', () => {
    const authorize = metricsAuthorizer(loadConfig({ env: { TRAWL_API_TOKENS: TOKEN } }), '0.0.0.0');
    expect(authorize(`Bearer ${TOKEN}`)).toBe(true);
    expect(authorize('Bearer nope')).toBe(false);
    expect(authorize(undefined)).toBe(false);
  });

  it('is open when configured open, or on loopback without tokens', () => {
    expect(metricsAuthorizer(loadConfig({ env: { TRAWL_API_TOKENS: TOKEN, TRAWL_METRICS_OPEN: 'true' } }), '0.0.0.0')(undefined)).toBe(true);
    expect(metricsAuthorizer(loadConfig({ env: {} }), '127.0.0.1')(undefined)).toBe(true);
  });

  it('refuses to serve metrics off loopback with neither a token nor TRAWL_METRICS_OPEN', () => {
    expect(() => metricsAuthorizer(loadConfig({ env: {} }), '0.0.0.0')).toThrow(ConfigError);
  });
});

import { ConfigError, loadConfig } from '@trawl/config';
import { describe, expect, it } from 'vitest';
import type { ProxyRequestEvent } from '@trawl/fetch';
import { isLoopback, metricsAuthorizer, serveProcessMetrics } from './metrics.js';
import type { BlockedHostEvent, Runtime } from './runtime.js';

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

describe('trawl_proxy_requests_total', () => {
  /** The parts of a runtime the process metrics read. */
  const runtimeWith = (env: Record<string, string>) => {
    const listeners = new Set<(event: ProxyRequestEvent) => void>();
    const blockedListeners = new Set<(event: BlockedHostEvent) => void>();
    const runtime = {
      config: loadConfig({ env: { TRAWL_METRICS_PORT: '0', ...env } }),
      logger: { warn: () => undefined },
      counters: { observe: () => () => undefined },
      timings: { observe: () => () => undefined },
      observeProxyRequests: (listener: (event: ProxyRequestEvent) => void) => {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
      observeBlockedHosts: (listener: (event: BlockedHostEvent) => void) => {
        blockedListeners.add(listener);
        return () => blockedListeners.delete(listener);
      },
    } as unknown as Runtime;
    return {
      runtime,
      emit: (event: ProxyRequestEvent) => listeners.forEach((listener) => listener(event)),
      block: (event: BlockedHostEvent) => blockedListeners.forEach((listener) => listener(event)),
      listeners,
      blockedListeners,
    };
  };

  it('counts proxied requests by tier, proxy and outcome', async () => {
    const { runtime, emit, listeners } = runtimeWith({ TRAWL_PROXY_URLS: 'dc1=http://10.0.0.5:3128,dc2=http://10.0.0.6:3128', TRAWL_PROXY_TIERS: 'dc=dc1,dc2' });
    const served = await serveProcessMetrics(runtime, 'worker');
    emit({ tier: 'dc', proxy: 'dc1', outcome: 'ok' });
    emit({ tier: 'dc', proxy: 'dc1', outcome: 'ok' });
    emit({ tier: 'dc', proxy: 'dc2', outcome: 'proxy-failed' });
    emit({ tier: 'dc', proxy: '', outcome: 'unavailable' });
    const text = await served.metrics.text();
    expect(text).toContain('trawl_proxy_requests_total{tier="dc",proxy="dc1",outcome="ok",namespace="trawl",role="worker"} 2');
    expect(text).toContain('trawl_proxy_requests_total{tier="dc",proxy="dc2",outcome="proxy-failed",namespace="trawl",role="worker"} 1');
    expect(text).toContain('trawl_proxy_requests_total{tier="dc",proxy="",outcome="unavailable",namespace="trawl",role="worker"} 1');
    await served.close();
    expect(listeners.size).toBe(0);
  });

  it('counts hosts judged blocked by the tier that refused them and the action, with or without proxies', async () => {
    const { runtime, block, blockedListeners } = runtimeWith({});
    const served = await serveProcessMetrics(runtime, 'worker');
    block({ host: 'a.example', tier: 'none', action: 'paused', reason: 'blocked', toTier: null });
    expect(await served.metrics.text()).toContain('trawl_host_blocked_total{tier="none",action="paused",namespace="trawl",role="worker"} 1');
    await served.close();
    expect(blockedListeners.size).toBe(0);
  });

  it('is not defined without proxies', async () => {
    const { runtime, listeners } = runtimeWith({});
    const served = await serveProcessMetrics(runtime, 'worker');
    expect(await served.metrics.text()).not.toContain('trawl_proxy_requests_total');
    expect(listeners.size).toBe(0);
    await served.close();
  });
});

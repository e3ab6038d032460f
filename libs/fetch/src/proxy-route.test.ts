import { describe, expect, it } from 'vitest';
import { DIRECT, type ProxyOptions, ProxyRouter, proxyOptionsProblems, type Route } from './proxy-route.js';

const proxies = (...names: string[]): ProxyOptions['proxies'] => names.map((name) => ({ name, url: `http://${name}.proxy.example:3128` }));
const exitOf = (route: Route): string => (route.kind === 'exit' ? route.exit : `unavailable@${route.retryAt}`);
const hosts = Array.from({ length: 400 }, (_, i) => `host${i}.example`);

describe('ProxyRouter', () => {
  it('is sticky: a host gets the same proxy every time, and every router (process) agrees', () => {
    const a = new ProxyRouter({ proxies: proxies('p1', 'p2', 'p3') });
    const b = new ProxyRouter({ proxies: proxies('p1', 'p2', 'p3') });
    for (const host of hosts.slice(0, 50)) {
      const first = exitOf(a.route(host, 0));
      for (let i = 1; i < 5; i++) expect(exitOf(a.route(host, i * 1000))).toBe(first);
      expect(exitOf(b.route(host, 0))).toBe(first);
    }
  });

  it('spreads hosts over the members of the tier', () => {
    const router = new ProxyRouter({ proxies: proxies('p1', 'p2', 'p3', 'p4') });
    const counts = new Map<string, number>();
    for (const host of hosts) counts.set(exitOf(router.route(host, 0)), (counts.get(exitOf(router.route(host, 0))) ?? 0) + 1);
    expect([...counts.keys()].sort()).toEqual(['p1', 'p2', 'p3', 'p4']);
    for (const count of counts.values()) expect(count).toBeGreaterThan(60); // 100 each on average
  });

  it('a failed proxy is out for a back-off that doubles; only its hosts move, and they come back', () => {
    const router = new ProxyRouter({ proxies: proxies('p1', 'p2', 'p3'), backoffBaseMs: 1000, backoffMaxMs: 3000 });
    const before = new Map(hosts.map((host) => [host, exitOf(router.route(host, 0))]));

    expect(router.failed('p2', 10_000)).toBe(11_000);
    const during = new Map(hosts.map((host) => [host, exitOf(router.route(host, 10_500))]));
    for (const host of hosts) {
      if (before.get(host) === 'p2') expect(during.get(host)).not.toBe('p2');
      else expect(during.get(host)).toBe(before.get(host));
    }
    expect(router.outOfService(10_500)).toEqual([{ exit: 'p2', until: 11_000 }]);
    // Back at the end of the back-off: the same hosts return to it.
    for (const host of hosts) expect(exitOf(router.route(host, 11_000))).toBe(before.get(host));

    // The requests that were in flight through it fail too: still one failure.
    expect(router.failed('p2', 20_000)).toBe(22_000);
    expect(router.failed('p2', 20_001)).toBe(22_000);
    expect(router.failed('p2', 30_000)).toBe(33_000); // capped at backoffMaxMs
    router.succeeded('p2');
    expect(router.failed('p2', 40_000)).toBe(41_000); // forgiven: starts over
  });

  it('skips the proxies a request has failed through; with none left, says when to try again', () => {
    const router = new ProxyRouter({ proxies: proxies('p1', 'p2'), backoffBaseMs: 1000 });
    const first = exitOf(router.route('a.example', 0));
    const second = exitOf(router.route('a.example', 0, new Set([first])));
    expect(second).not.toBe(first);
    expect(router.route('a.example', 0, new Set([first, second]))).toEqual({ kind: 'unavailable', tier: '1', retryAt: 1000 });
    router.failed('p1', 0);
    router.failed('p2', 500);
    expect(router.route('a.example', 600)).toEqual({ kind: 'unavailable', tier: '1', retryAt: 1000 });
  });

  it('rules: the longest matching domain wins, `none` goes direct, and the tierFor hook can raise a host', () => {
    const options: ProxyOptions = {
      proxies: proxies('dc1', 'dc2', 'res1'),
      tiers: [{ name: 'dc', members: ['dc1', 'dc2'] }, { name: 'res', members: ['res1'] }, { name: 'mixed', members: [DIRECT, 'dc1'] }],
      rules: [{ domain: 'example.com', tier: 'none' }, { domain: 'shop.example.com', tier: 'res' }, { domain: 'mixed.example', tier: 'mixed' }],
    };
    const router = new ProxyRouter(options);
    expect(router.tierFor('example.com')).toBe('none');
    expect(router.tierFor('www.example.com')).toBe('none');
    expect(router.tierFor('shop.example.com')).toBe('res');
    expect(router.tierFor('eu.shop.example.com')).toBe('res');
    expect(router.tierFor('notexample.com')).toBe('dc');
    expect(router.route('www.example.com', 0)).toEqual({ kind: 'exit', exit: DIRECT, tier: 'none' });
    expect(exitOf(router.route('eu.shop.example.com', 0))).toBe('res1');
    expect(['none', 'dc1']).toContain(exitOf(router.route('a.mixed.example', 0)));

    const raised = new ProxyRouter({ ...options, tierFor: (host, planned) => (host === 'banned.example' ? 'res' : planned) });
    expect(raised.tierFor('banned.example')).toBe('res');
    expect(raised.tierFor('other.example')).toBe('dc');
  });

  it('a blocked host moves up the tiers in their order, to the last, and a host kept off proxies never moves', () => {
    const router = new ProxyRouter({
      proxies: proxies('dc1', 'res1'),
      tiers: [{ name: 'direct', members: [DIRECT] }, { name: 'dc', members: ['dc1'] }, { name: 'res', members: ['res1'] }],
      rules: [{ domain: 'never.example', tier: 'none' }, { domain: 'pinned.example', tier: 'dc' }],
    });
    expect([0, 1, 2, 3].map((level) => router.tierFor('a.example', level))).toEqual(['direct', 'dc', 'res', 'res']);
    expect([0, 1, 2].map((level) => router.canEscalate('a.example', level))).toEqual([true, true, false]);
    expect(router.route('a.example', 0, new Set(), 1)).toEqual({ kind: 'exit', exit: 'dc1', tier: 'dc' });
    expect(router.route('a.example', 0, new Set(), 2)).toEqual({ kind: 'exit', exit: 'res1', tier: 'res' });
    // A host pinned to a tier moves up from there.
    expect(router.tierFor('pinned.example', 1)).toBe('res');
    expect(router.canEscalate('pinned.example', 1)).toBe(false);
    // `none`: the operator said never proxied.
    expect(router.tierFor('www.never.example', 2)).toBe('none');
    expect(router.canEscalate('www.never.example', 0)).toBe(false);
  });

  it('sessions by requests: after n requests a host picks again (some move), counted per host', () => {
    const router = new ProxyRouter({ proxies: proxies('p1', 'p2', 'p3', 'p4'), sessionRequests: 3 });
    let moved = 0;
    for (const host of hosts.slice(0, 40)) {
      const picks = Array.from({ length: 6 }, () => exitOf(router.route(host, 0)));
      expect(picks[1]).toBe(picks[0]);
      expect(picks[2]).toBe(picks[0]);
      expect(picks[4]).toBe(picks[3]);
      expect(picks[5]).toBe(picks[3]);
      if (picks[3] !== picks[0]) moved++;
    }
    expect(moved).toBeGreaterThan(15); // 3 in 4 on average
  });

  it('sessions by time: hosts turn over at their own offsets, and every router agrees when', () => {
    const sessionMs = 60_000;
    const a = new ProxyRouter({ proxies: proxies('p1', 'p2', 'p3', 'p4'), sessionMs });
    const b = new ProxyRouter({ proxies: proxies('p1', 'p2', 'p3', 'p4'), sessionMs });
    let changedAtOnce = 0;
    let changedOverPeriod = 0;
    for (const host of hosts.slice(0, 100)) {
      if (exitOf(a.route(host, 1_000_000)) !== exitOf(a.route(host, 1_000_001))) changedAtOnce++;
      if (exitOf(a.route(host, 1_000_000)) !== exitOf(a.route(host, 1_000_000 + sessionMs))) changedOverPeriod++;
      expect(exitOf(b.route(host, 1_234_567))).toBe(exitOf(a.route(host, 1_234_567)));
    }
    expect(changedAtOnce).toBeLessThan(5);
    expect(changedOverPeriod).toBeGreaterThan(50);
  });

  it.each([
    [{ proxies: proxies('a', 'a') }, ['proxies[1]: the name a is used twice']],
    [{ proxies: [{ name: 'none', url: 'http://h:1' }] }, ['proxies[0]: bad name "none"']],
    [{ proxies: [{ name: 'a', url: 'gopher://h:1' }] }, ['proxy a: gopher:// is not supported (http, https, socks5)']],
    [{ proxies: proxies('a'), tiers: [{ name: 't', members: ['b'] }] }, ['tier t: no proxy b']],
    [{ proxies: proxies('a'), rules: [{ domain: 'x.example', tier: 'gold' }] }, ['rule x.example: no tier gold']],
    [{ proxies: proxies('a'), sessionRequests: -1 }, ['proxies.sessionRequests must be an integer >= 0, got -1']],
  ] as Array<[ProxyOptions, string[]]>)('validates %j', (options, problems) => {
    expect(proxyOptionsProblems(options)).toEqual(problems);
  });
});

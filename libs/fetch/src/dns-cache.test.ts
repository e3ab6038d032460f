import type { LookupAddress } from 'node:dns';
import { ManualClock } from '@trawl/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DnsCache, type DnsRecord, type DnsResolver, parseHostsFile } from './dns-cache.js';
import { closeAll, fetchError, makeFetcher, startServer } from './servers.test-helpers.js';

afterEach(closeAll);

// There is no DNS server on loopback, so the resolver is a test double: a zone declared as data
// (name → A/AAAA records with TTLs, or a DNS error code), with a log of the queries it answered.
type Answer = { a?: DnsRecord[]; aaaa?: DnsRecord[] } | { error: string };

class FakeResolver implements DnsResolver {
  readonly queries: string[] = [];
  constructor(private readonly zone: Record<string, Answer>) {}

  resolve4(hostname: string): Promise<DnsRecord[]> {
    return this.answer(hostname, 'A');
  }

  resolve6(hostname: string): Promise<DnsRecord[]> {
    return this.answer(hostname, 'AAAA');
  }

  set(hostname: string, answer: Answer): void {
    this.zone[hostname] = answer;
  }

  private async answer(hostname: string, type: 'A' | 'AAAA'): Promise<DnsRecord[]> {
    this.queries.push(`${type} ${hostname}`);
    const answer = this.zone[hostname] ?? { error: 'ENOTFOUND' };
    if ('error' in answer) {
      throw Object.assign(new Error(`query${type === 'A' ? 'A' : 'Aaaa'} ${answer.error} ${hostname}`), {
        code: answer.error,
        hostname,
        syscall: type === 'A' ? 'queryA' : 'queryAaaa',
      });
    }
    const records = type === 'A' ? answer.a : answer.aaaa;
    if (records === undefined || records.length === 0) {
      throw Object.assign(new Error(`query ENODATA ${hostname}`), { code: 'ENODATA', hostname, syscall: 'queryA' });
    }
    return records;
  }

  /** How many times `hostname` was asked (A and AAAA count as one lookup). */
  lookups(hostname: string): number {
    return this.queries.filter((query) => query === `A ${hostname}`).length;
  }
}

function lookupAll(cache: DnsCache, hostname: string, options: object = { all: true }): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) => {
    cache.lookup(hostname, options, (error, addresses, family) => {
      if (error) reject(error);
      else resolve(typeof addresses === 'string' ? [{ address: addresses, family: family ?? 4 }] : addresses);
    });
  });
}

async function lookupError(cache: DnsCache, hostname: string): Promise<NodeJS.ErrnoException & { cached?: boolean; retryAt?: number }> {
  return lookupAll(cache, hostname).then(
    () => {
      throw new Error(`expected ${hostname} to fail`);
    },
    (error: NodeJS.ErrnoException) => error,
  );
}

const HOUR = 3_600_000;

describe('DnsCache: positive answers', () => {
  it('returns A then AAAA records and honours the shortest record TTL', async () => {
    const clock = new ManualClock();
    const resolver = new FakeResolver({
      'site.test': { a: [{ address: '93.184.216.34', ttl: 300 }], aaaa: [{ address: '2606:2800:220:1::1', ttl: 60 }] },
    });
    const dns = new DnsCache({ clock, resolver });

    expect(await lookupAll(dns, 'site.test')).toEqual([
      { address: '93.184.216.34', family: 4 },
      { address: '2606:2800:220:1::1', family: 6 },
    ]);
    clock.advance(59_999);
    await lookupAll(dns, 'site.test');
    expect(resolver.lookups('site.test')).toBe(1);
    expect(dns.stats()).toMatchObject({ hits: 1, misses: 1 });

    clock.advance(1); // 60 s: the AAAA TTL (the shorter one) is up
    await lookupAll(dns, 'site.test');
    expect(resolver.lookups('site.test')).toBe(2);
    expect(dns.stats()).toMatchObject({ hits: 1, misses: 2 });
  });

  it('caps a long TTL at maxTtlS', async () => {
    const clock = new ManualClock();
    const resolver = new FakeResolver({ 'long.test': { a: [{ address: '8.8.8.8', ttl: 86_400 }] } });
    const dns = new DnsCache({ clock, resolver, maxTtlS: 600 });
    await lookupAll(dns, 'long.test');
    clock.advance(599_999);
    await lookupAll(dns, 'long.test');
    expect(resolver.lookups('long.test')).toBe(1);
    clock.advance(1);
    await lookupAll(dns, 'long.test');
    expect(resolver.lookups('long.test')).toBe(2);
  });

  it('defaults maxTtlS to an hour', async () => {
    const clock = new ManualClock();
    const resolver = new FakeResolver({ 'day.test': { a: [{ address: '8.8.4.4', ttl: 86_400 }] } });
    const dns = new DnsCache({ clock, resolver });
    await lookupAll(dns, 'day.test');
    clock.advance(HOUR - 1);
    await lookupAll(dns, 'day.test');
    expect(resolver.lookups('day.test')).toBe(1);
    clock.advance(1);
    await lookupAll(dns, 'day.test');
    expect(resolver.lookups('day.test')).toBe(2);
  });

  it('a TTL of 0 is not cached', async () => {
    const resolver = new FakeResolver({ 'zero.test': { a: [{ address: '8.8.8.8', ttl: 0 }] } });
    const dns = new DnsCache({ clock: new ManualClock(), resolver });
    await lookupAll(dns, 'zero.test');
    await lookupAll(dns, 'zero.test');
    expect(resolver.lookups('zero.test')).toBe(2);
  });

  it('answers in the shape asked for: first address, or one family', async () => {
    const resolver = new FakeResolver({
      'dual.test': { a: [{ address: '1.2.3.4', ttl: 60 }], aaaa: [{ address: '2001:4860::1', ttl: 60 }] },
      'v4only.test': { a: [{ address: '1.2.3.5', ttl: 60 }] },
    });
    const dns = new DnsCache({ clock: new ManualClock(), resolver });
    expect(await lookupAll(dns, 'dual.test', {})).toEqual([{ address: '1.2.3.4', family: 4 }]);
    expect(await lookupAll(dns, 'dual.test', { family: 6, all: true })).toEqual([{ address: '2001:4860::1', family: 6 }]);
    // A family the host lacks fails this lookup without poisoning the name.
    await expect(lookupAll(dns, 'v4only.test', { family: 6 })).rejects.toMatchObject({ code: 'ENOTFOUND' });
    expect(await lookupAll(dns, 'v4only.test', {})).toEqual([{ address: '1.2.3.5', family: 4 }]);
    expect(dns.stats().failuresCached).toBe(0);
  });

  it('concurrent lookups of one name share one query', async () => {
    const resolver = new FakeResolver({ 'busy.test': { a: [{ address: '8.8.8.8', ttl: 60 }] } });
    const dns = new DnsCache({ clock: new ManualClock(), resolver });
    await Promise.all(Array.from({ length: 10 }, () => lookupAll(dns, 'busy.test')));
    expect(resolver.lookups('busy.test')).toBe(1);
  });
});

describe('DnsCache: negative caching', () => {
  it('remembers NXDOMAIN for an hour without asking again, then asks again', async () => {
    const clock = new ManualClock();
    const resolver = new FakeResolver({ 'gone.test': { error: 'ENOTFOUND' } });
    const dns = new DnsCache({ clock, resolver });

    const first = await lookupError(dns, 'gone.test');
    expect(first).toMatchObject({ code: 'ENOTFOUND', hostname: 'gone.test', cached: false });
    expect(first.retryAt).toBeUndefined(); // "no such host" is a skip, not a retry

    for (const step of [1_000, 60_000, 30 * 60_000, HOUR - 1_861_001]) { // up to 1 ms short of the hour
      clock.advance(step);
      expect(await lookupError(dns, 'gone.test')).toMatchObject({ code: 'ENOTFOUND', cached: true });
    }
    expect(resolver.lookups('gone.test')).toBe(1); // not re-resolved within errorTtlMs
    expect(dns.stats()).toMatchObject({ misses: 1, hits: 4, failuresCached: 1 });

    resolver.set('gone.test', { a: [{ address: '8.8.8.8', ttl: 60 }] }); // the name appears
    clock.advance(1);
    expect(await lookupAll(dns, 'gone.test')).toEqual([{ address: '8.8.8.8', family: 4 }]);
    expect(resolver.lookups('gone.test')).toBe(2);
  });

  it('remembers "no address records" (ENODATA for A and AAAA) like NXDOMAIN', async () => {
    const clock = new ManualClock();
    const resolver = new FakeResolver({ 'mx-only.test': { a: [], aaaa: [] } });
    const dns = new DnsCache({ clock, resolver, errorTtlMs: 10_000 });
    // cacheable-lookup folds NODATA into an empty answer and reports ENOTFOUND.
    expect(await lookupError(dns, 'mx-only.test')).toMatchObject({ code: 'ENOTFOUND' });
    clock.advance(9_999);
    await lookupError(dns, 'mx-only.test');
    expect(resolver.lookups('mx-only.test')).toBe(1);
    clock.advance(1);
    await lookupError(dns, 'mx-only.test');
    expect(resolver.lookups('mx-only.test')).toBe(2);
  });

  it.each(['ESERVFAIL', 'ETIMEOUT', 'EREFUSED', 'ECONNREFUSED'])(
    'remembers a transient %s only for transientErrorTtlMs, with a retryAt',
    async (code) => {
      const clock = new ManualClock();
      const resolver = new FakeResolver({ 'flaky.test': { error: code } });
      const dns = new DnsCache({ clock, resolver });
      const first = await lookupError(dns, 'flaky.test');
      expect(first).toMatchObject({ code, cached: false, retryAt: clock.now() + 2_000 });
      clock.advance(1_999);
      expect(await lookupError(dns, 'flaky.test')).toMatchObject({ code, cached: true });
      expect(resolver.lookups('flaky.test')).toBe(1);
      clock.advance(1);
      await lookupError(dns, 'flaky.test');
      expect(resolver.lookups('flaky.test')).toBe(2);
    },
  );

  it('transientErrorTtlMs = errorTtlMs caches every failure for the hour', async () => {
    const clock = new ManualClock();
    const resolver = new FakeResolver({ 'down.test': { error: 'ESERVFAIL' } });
    const dns = new DnsCache({ clock, resolver, transientErrorTtlMs: HOUR });
    await lookupError(dns, 'down.test');
    clock.advance(HOUR - 1);
    await lookupError(dns, 'down.test');
    expect(resolver.lookups('down.test')).toBe(1);
  });

  it('keeps at most maxEntries failures, dropping the oldest', async () => {
    const clock = new ManualClock();
    const resolver = new FakeResolver({});
    const dns = new DnsCache({ clock, resolver, maxEntries: 2 });
    for (const name of ['a.test', 'b.test', 'c.test']) await lookupError(dns, name);
    await lookupError(dns, 'c.test');
    await lookupError(dns, 'a.test'); // evicted: asked again
    expect(resolver.lookups('c.test')).toBe(1);
    expect(resolver.lookups('a.test')).toBe(2);
  });

  it('rejects nonsense options', () => {
    expect(() => new DnsCache({ errorTtlMs: -1 })).toThrow(expect.objectContaining({ code: 'ERR_CONFIG_INVALID' }));
    expect(() => new DnsCache({ maxEntries: 0 })).toThrow(expect.objectContaining({ code: 'ERR_CONFIG_INVALID' }));
  });
});

describe('DnsCache in the Fetcher', () => {
  it('resolves through the cache, once per TTL, for fetches and robots.txt alike', async () => {
    const server = await startServer((_req, res) => {
      res.writeHead(200, { connection: 'close' }); // every fetch opens (and resolves for) a new connection
      res.end('hello');
    });
    const resolver = new FakeResolver({ 'site.test': { a: [{ address: '127.0.0.1', ttl: 300 }] } });
    const dns = new DnsCache({ resolver });
    const fetcher = makeFetcher({ dns });
    expect((await fetcher.fetch(`http://site.test:${server.port}/a`)).body.toString()).toBe('hello');
    expect((await fetcher.fetchRobots(`http://site.test:${server.port}/robots.txt`)).kind).toBe('response');
    expect(resolver.lookups('site.test')).toBe(1);
    expect(server.connections).toBe(2);
    expect(dns.stats()).toMatchObject({ misses: 1, hits: 1 });
  });

  it('NXDOMAIN is ERR_FETCH_NETWORK with action skip, and is not asked again within the hour', async () => {
    const resolver = new FakeResolver({});
    const fetcher = makeFetcher({ dns: new DnsCache({ resolver }) });
    const first = await fetchError(fetcher.fetch('http://no-such-host.test/'));
    expect(first).toMatchObject({ code: 'ERR_FETCH_NETWORK', action: 'skip', details: { errno: 'ENOTFOUND', dns: true } });
    expect(first.message).toMatch(/DNS lookup of no-such-host\.test failed: ENOTFOUND \(no such host/);
    const second = await fetchError(fetcher.fetch('http://no-such-host.test/other'));
    expect(second).toMatchObject({ action: 'skip', details: { cached: true } });
    expect(second.message).toMatch(/negative cache/);
    expect(resolver.lookups('no-such-host.test')).toBe(1);
  });

  it('SERVFAIL is ERR_FETCH_NETWORK with action retry and a retryAt', async () => {
    const clock = new ManualClock();
    const resolver = new FakeResolver({ 'broken.test': { error: 'ESERVFAIL' } });
    const fetcher = makeFetcher({ dns: new DnsCache({ resolver, clock }) });
    const error = await fetchError(fetcher.fetch('http://broken.test/'));
    expect(error).toMatchObject({ code: 'ERR_FETCH_NETWORK', action: 'retry', retryAt: clock.now() + 2_000 });
    expect(error.message).toMatch(/ESERVFAIL \(the DNS server failed/);
  });

  it('resolveAll answers as the requests resolve: pinned names, then the cache, every address, the address rule not applied', async () => {
    const resolver = new FakeResolver({ 'both.test': { a: [{ address: '10.0.0.5', ttl: 300 }, { address: '93.184.216.34', ttl: 300 }] } });
    const fetcher = makeFetcher({ dns: new DnsCache({ resolver, hosts: parseHostsFile('127.1.0.7 h7.web.test\n') }) });
    expect(await fetcher.resolveAll('h7.web.test')).toEqual(['127.1.0.7']);
    expect(await fetcher.resolveAll('both.test')).toEqual(['10.0.0.5', '93.184.216.34']);
    expect(await fetcher.resolveAll('both.test')).toEqual(['10.0.0.5', '93.184.216.34']);
    expect(resolver.lookups('both.test')).toBe(1);
    await expect(fetcher.resolveAll('missing.test')).rejects.toMatchObject({ code: 'ENOTFOUND' });
  });

  it('rejects dns and lookup together', () => {
    expect(() => makeFetcher({ dns: new DnsCache(), lookup: (() => undefined) as never })).toThrow(
      expect.objectContaining({ code: 'ERR_CONFIG_INVALID' }),
    );
  });
});

describe('static hosts', () => {
  it('parses hosts(5) text', () => {
    const hosts = parseHostsFile('# comment\n127.1.0.1\th0.web.test alias.web.test\n\n::1 six.test # trailing\n127.1.0.2 H0.WEB.TEST\n');
    expect(hosts.get('h0.web.test')).toEqual(['127.1.0.1', '127.1.0.2']);
    expect(hosts.get('alias.web.test')).toEqual(['127.1.0.1']);
    expect(hosts.get('six.test')).toEqual(['::1']);
    expect(() => parseHostsFile('not-an-ip name\n')).toThrow(/line 1/);
    expect(() => parseHostsFile('127.0.0.1\n')).toThrow(/line 1/);
  });

  it('answers pinned names before any resolver', async () => {
    const resolver = { resolve4: vi.fn(), resolve6: vi.fn() };
    const cache = new DnsCache({ resolver, hosts: parseHostsFile('127.1.0.7 h7.web.test\n') });
    const address = await new Promise((resolve, reject) => cache.lookup('H7.web.test', {}, (error, a) => (error ? reject(error) : resolve(a))));
    expect(address).toBe('127.1.0.7');
    expect(resolver.resolve4).not.toHaveBeenCalled();
  });
});

describe('Fetcher.serverAddress', () => {
  it('answers from the DNS cache the requests use: one lookup for the address and the request', async () => {
    const clock = new ManualClock();
    const resolver = new FakeResolver({
      'site.test': { a: [{ address: '93.184.216.34', ttl: 300 }] },
      'private.test': { a: [{ address: '10.0.0.5', ttl: 300 }, { address: '93.184.216.35', ttl: 300 }] },
    });
    const fetcher = makeFetcher({ dns: new DnsCache({ clock, resolver }), clock });
    expect(await fetcher.serverAddress('site.test')).toBe('93.184.216.34');
    expect(await fetcher.serverAddress('site.test')).toBe('93.184.216.34');
    expect(resolver.lookups('site.test')).toBe(1);
    // The address the SSRF guard lets a request connect to, not a refused one.
    expect(await fetcher.serverAddress('private.test')).toBe('93.184.216.35');
    expect(await fetcher.serverAddress('[2001:db8::1]')).toBe('2001:db8::1');
    expect(await fetcher.serverAddress('203.0.113.9')).toBe('203.0.113.9');
  });

  it('a name that does not resolve is null (the request meets the cached failure), never a throw', async () => {
    const resolver = new FakeResolver({});
    const dns = new DnsCache({ resolver });
    const fetcher = makeFetcher({ dns });
    expect(await fetcher.serverAddress('nowhere.test')).toBeNull();
    expect(dns.stats().failuresCached).toBe(1);
  });
});

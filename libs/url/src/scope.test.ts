import { describe, expect, it } from 'vitest';
import { inScope, type Scope, type ScopeMode, scopeFromSeeds } from './scope.js';

const SEEDS = ['http://www.example.com/start', 'https://foo.github.io/', 'http://127.0.0.5:8080/', 'http://[::1]:9000/'];

describe('scopeFromSeeds', () => {
  it('collects each seed host and registrable domain', () => {
    const scope = scopeFromSeeds('host', SEEDS);
    expect(scope.mode).toBe('host');
    expect([...scope.hosts]).toEqual(['www.example.com', 'foo.github.io', '127.0.0.5:8080', '[::1]:9000']);
    expect([...scope.domains]).toEqual(['example.com', 'foo.github.io', '127.0.0.5', '[::1]']);
  });

  it('canonicalizes seed hosts', () => {
    const scope = scopeFromSeeds('host', ['HTTP://User@WWW.Example.COM.:80/x']);
    expect([...scope.hosts]).toEqual(['www.example.com']);
  });

  it('keeps one entry per host', () => {
    expect(scopeFromSeeds('host', ['http://a.com/1', 'https://a.com/2']).hosts.size).toBe(1);
  });

  it.each([
    { seed: 'mailto:a@example.com', code: 'ERR_URL_SCHEME' },
    { seed: 'example.com', code: 'ERR_URL_INVALID' },
  ])('refuses seed $seed with $code', ({ seed, code }) => {
    expect(() => scopeFromSeeds('any', [seed])).toThrow(expect.objectContaining({ code }));
  });
});

describe('inScope', () => {
  const cases: { mode: ScopeMode; url: string; expected: boolean }[] = [
    // host: the exact host (port included), either scheme.
    { mode: 'host', url: 'http://www.example.com/other', expected: true },
    { mode: 'host', url: 'https://www.example.com/', expected: true },
    { mode: 'host', url: 'http://example.com/', expected: false },
    { mode: 'host', url: 'http://blog.example.com/', expected: false },
    { mode: 'host', url: 'http://www.example.com:8080/', expected: false },
    { mode: 'host', url: 'http://foo.github.io/x', expected: true },
    { mode: 'host', url: 'http://bar.github.io/', expected: false },
    { mode: 'host', url: 'http://127.0.0.5:8080/a', expected: true },
    { mode: 'host', url: 'http://127.0.0.5:8081/a', expected: false },
    { mode: 'host', url: 'http://127.0.0.6:8080/a', expected: false },
    { mode: 'host', url: 'http://[::1]:9000/a', expected: true },
    { mode: 'host', url: 'http://other.org/', expected: false },
    // domain: any host under a seed's registrable domain; ports do not matter.
    { mode: 'domain', url: 'http://blog.example.com/', expected: true },
    { mode: 'domain', url: 'https://example.com/', expected: true },
    { mode: 'domain', url: 'http://a.b.example.com:8443/', expected: true },
    { mode: 'domain', url: 'http://example.co.uk/', expected: false },
    { mode: 'domain', url: 'http://notexample.com/', expected: false },
    { mode: 'domain', url: 'http://www.foo.github.io/', expected: true },
    { mode: 'domain', url: 'http://bar.github.io/', expected: false },
    { mode: 'domain', url: 'http://github.io/', expected: false },
    { mode: 'domain', url: 'http://127.0.0.5:9999/', expected: true },
    { mode: 'domain', url: 'http://127.0.0.6:8080/', expected: false },
    { mode: 'domain', url: 'http://[::1]/', expected: true },
    { mode: 'domain', url: 'http://other.org/', expected: false },
    // any: every http(s) URL.
    { mode: 'any', url: 'http://other.org/', expected: true },
    { mode: 'any', url: 'https://127.0.0.9:1234/', expected: true },
    // Never throws: what is not an http(s) URL is out of every scope.
    { mode: 'any', url: 'mailto:a@example.com', expected: false },
    { mode: 'host', url: 'not a url', expected: false },
    { mode: 'domain', url: '', expected: false },
  ];

  it.each(cases)('$mode: $url → $expected', ({ mode, url, expected }) => {
    expect(inScope(scopeFromSeeds(mode, SEEDS), url)).toBe(expected);
  });

  it('works with a scope built by hand', () => {
    const scope: Scope = { mode: 'domain', hosts: new Set(), domains: new Set(['example.org']) };
    expect(inScope(scope, 'http://docs.example.org/')).toBe(true);
    expect(inScope(scope, 'http://example.com/')).toBe(false);
  });

  it('takes hosts and domains added whatever the mode (seeds with a scope of their own)', () => {
    const scope: Scope = { mode: 'host', hosts: new Set(['a.example']), domains: new Set(['a.example']), extraDomains: new Set(['b.example']), extraHosts: new Set(['c.d.example']) };
    expect(inScope(scope, 'http://a.example/')).toBe(true);
    expect(inScope(scope, 'http://x.a.example/')).toBe(false);
    expect(inScope(scope, 'http://x.b.example/')).toBe(true);
    expect(inScope(scope, 'http://c.d.example/')).toBe(true);
    expect(inScope(scope, 'http://e.d.example/')).toBe(false);
  });

  it('accepts any scope with no seeds', () => {
    expect(inScope(scopeFromSeeds('any', []), 'http://anything.example/')).toBe(true);
    expect(inScope(scopeFromSeeds('host', []), 'http://anything.example/')).toBe(false);
  });
});

import { describe, expect, it } from 'vitest';
import { hostOf, registrableDomain } from './host.js';

describe('hostOf', () => {
  it.each([
    { url: 'http://example.com/', host: 'example.com' },
    { url: 'https://example.com/a?b=1', host: 'example.com' },
    { url: 'http://example.com:8080/', host: 'example.com:8080' },
    { url: 'https://example.com:80/', host: 'example.com:80' },
    { url: 'http://127.0.0.5:8080/x', host: '127.0.0.5:8080' },
    { url: 'http://[::1]:8080/', host: '[::1]:8080' },
    { url: 'http://[::1]/', host: '[::1]' },
    { url: 'http://xn--bcher-kva.example/', host: 'xn--bcher-kva.example' },
    // Not canonical, but still valid: the same key as the canonical form.
    { url: 'HTTP://User:pw@WWW.Example.COM.:80/', host: 'www.example.com' },
    { url: 'https://example.com:443/', host: 'example.com' },
    { url: 'http://Bücher.example/', host: 'xn--bcher-kva.example' },
  ])('$url → $host', ({ url, host }) => {
    expect(hostOf(url)).toBe(host);
  });

  it.each([
    { url: 'ftp://example.com/', code: 'ERR_URL_SCHEME' },
    { url: 'example.com', code: 'ERR_URL_INVALID' },
    { url: '', code: 'ERR_URL_INVALID' },
  ])('throws $code for $url', ({ url, code }) => {
    expect(() => hostOf(url)).toThrow(expect.objectContaining({ code }));
  });
});

describe('registrableDomain', () => {
  it.each([
    { host: 'example.com', domain: 'example.com' },
    { host: 'www.example.com', domain: 'example.com' },
    { host: 'a.b.c.example.com', domain: 'example.com' },
    { host: 'EXAMPLE.com', domain: 'example.com' },
    { host: 'www.example.co.uk', domain: 'example.co.uk' },
    { host: 'example.co.uk', domain: 'example.co.uk' },
    // Private suffixes are sites of their own.
    { host: 'foo.github.io', domain: 'foo.github.io' },
    { host: 'www.foo.github.io', domain: 'foo.github.io' },
    { host: 'bucket.s3.amazonaws.com', domain: 'bucket.s3.amazonaws.com' },
    // A public suffix on its own has no registrable domain: the host is its own site.
    { host: 'github.io', domain: 'github.io' },
    { host: 'co.uk', domain: 'co.uk' },
    { host: 'xn--bcher-kva.example', domain: 'xn--bcher-kva.example' },
    { host: 'shop.xn--bcher-kva.example', domain: 'xn--bcher-kva.example' },
    // Unknown TLDs follow the default rule (one label).
    { host: 'a.b.internal', domain: 'b.internal' },
    { host: 'a_b.example.com', domain: 'example.com' },
    // IP addresses and single labels are themselves.
    { host: '127.0.0.5', domain: '127.0.0.5' },
    { host: '192.168.0.1', domain: '192.168.0.1' },
    { host: 'localhost', domain: 'localhost' },
    { host: 'intranet', domain: 'intranet' },
    { host: '[::1]', domain: '[::1]' },
    { host: '[2001:db8::1]', domain: '[2001:db8::1]' },
    { host: '::1', domain: '::1' },
    // The port is ignored; a trailing dot too.
    { host: 'www.example.com:8080', domain: 'example.com' },
    { host: '127.0.0.5:8080', domain: '127.0.0.5' },
    { host: '[::1]:8080', domain: '[::1]' },
    { host: 'localhost:3000', domain: 'localhost' },
    { host: 'www.example.com.', domain: 'example.com' },
  ])('$host → $domain', ({ host, domain }) => {
    expect(registrableDomain(host)).toBe(domain);
  });
});

import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { fingerprint, fingerprintHex } from './fingerprint.js';

describe('fingerprint', () => {
  it.each([
    // Checked with `printf %s 'http://example.com/' | sha256sum`.
    { url: 'http://example.com/', hex: '2a1b402420ef46577471cdc7409b0fa2' },
    { url: 'https://example.com/', hex: '0f115db062b7c0dd030b16878c99dea5' },
  ])('is the first 128 bits of SHA-256: $url', ({ url, hex }) => {
    expect(fingerprintHex(url)).toBe(hex);
    expect(fingerprint(url).toString('hex')).toBe(hex);
  });

  it.each(['', 'http://example.com/', `http://example.com/${'a'.repeat(5000)}`, 'http://xn--bcher-kva.example/'])(
    'is always 16 bytes: %s',
    (url) => {
      expect(fingerprint(url)).toHaveLength(16);
      expect(fingerprintHex(url)).toMatch(/^[0-9a-f]{32}$/);
    },
  );

  it('hashes the URL as UTF-8, as createHash did (stored url_hash values stay valid)', () => {
    for (const url of ['http://example.com/', 'http://bücher.example/straße', 'http://example.com/€?q=東京', 'http://example.com/\u{1F600}', '']) {
      const expected = createHash('sha256').update(url, 'utf8').digest();
      expect(fingerprint(url).equals(expected.subarray(0, 16)), url).toBe(true);
      expect(fingerprintHex(url)).toBe(expected.toString('hex').slice(0, 32));
    }
  });

  it('is stable across calls', () => {
    expect(fingerprint('http://example.com/a?b=1').equals(fingerprint('http://example.com/a?b=1'))).toBe(true);
  });

  it('differs for different URLs, even by one character or case', () => {
    const urls = [
      'http://example.com/', 'https://example.com/', 'http://example.com/a', 'http://example.com/A',
      'http://example.com/a/', 'http://example.com/a?b', 'http://example.com/a?b=', 'http://example.com/a%2Fb',
      'http://example.com/a/b',
    ];
    expect(new Set(urls.map(fingerprintHex)).size).toBe(urls.length);
  });
});

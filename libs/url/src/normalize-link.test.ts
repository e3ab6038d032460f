import { describe, expect, it } from 'vitest';
import { ignoredExtension, ignoredPathExtension } from './extensions.js';
import { hostOf } from './host.js';
import { normalizeLink, normalizeUrl } from './normalize.js';
import { hostInScope, inScope, scopeFromSeeds } from './scope.js';

/** Spellings that exercise every step of normalization: case, ports, dots, IDNs, percent-encoding, matrix and query parameters. */
const RAW = [
  'HTTP://Example.COM:80/a/./b/../c.PDF',
  'https://example.com.:443/%7Euser/%41%2e%2E/x.tar.gz?b=2&a=1#frag',
  'https://bücher.example/straße/Datei%20Name.ZIP',
  'http://127.0.0.5:8080/a;jsessionid=123/report.pdf;v=2?utm_source=x&id=7',
  'https://sub.example.co.uk/a%2Fb/c%3Fd.html?q=%E2%82%AC',
  'https://example.com/.zip',
  'https://example.com/a.pdf/',
  'https://example.com/%zz%.pdf',
  'https://[2001:db8::1]:8443/x/y.JPG',
  'https://foo.github.io/a b/c<d>.png',
  'https://example.com',
  'https://example.com/dir/..%2F..%2Fetc/passwd',
  'ftp://example.com/x.pdf',
  'not a url',
];

describe('normalizeLink', () => {
  it('gives normalizeUrl’s answer, with the host hostOf gives and the path a parse of the canonical URL gives', () => {
    const extensions = new Set(['pdf', 'zip', 'tar.gz', 'jpg', 'png', 'gz']);
    const scope = scopeFromSeeds('domain', ['https://example.com/', 'https://foo.github.io/']);
    for (const raw of RAW) {
      const link = normalizeLink(raw);
      const plain = normalizeUrl(raw);
      expect(link.ok, raw).toBe(plain.ok);
      if (!link.ok || !plain.ok) continue;
      expect({ url: link.url, spelled: link.spelled }, raw).toEqual({ url: plain.url, spelled: plain.spelled });
      expect(link.host, raw).toBe(hostOf(link.url));
      expect(link.path, raw).toBe(new URL(link.url).pathname);
      expect(ignoredPathExtension(link.path, extensions), raw).toBe(ignoredExtension(link.url, extensions));
      expect(hostInScope(scope, link.host), raw).toBe(inScope(scope, link.url));
    }
  });
});

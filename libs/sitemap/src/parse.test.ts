import { readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { parseSitemap, type SitemapInput } from './parse.js';

const fixture = (name: string) => readFileSync(new URL(`./fixtures/${name}`, import.meta.url));
const utc = Date.UTC;

/** A stream of `bytes` in chunks of `size` (1 splits every multi-byte character and the gzip magic). */
const chunked = (bytes: Buffer, size: number): SitemapInput => {
  const chunks: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += size) chunks.push(bytes.subarray(i, i + size));
  return Readable.from(chunks);
};

/** A urlset of `n` generated entries. */
const urlset = (n: number, entry = (i: number) => `<url><loc>https://big.example/${i}</loc></url>`) => {
  const parts = ['<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'];
  for (let i = 0; i < n; i++) parts.push(entry(i));
  parts.push('</urlset>');
  return Buffer.from(parts.join('\n'));
};

const URLSET = {
  kind: 'urlset',
  entries: [
    { loc: 'https://www.example.com/', lastmod: utc(2024, 4, 1), changefreq: 'daily', priority: 1 },
    { loc: 'https://www.example.com/catalog?item=12&desc=vacation_hawaii', lastmod: utc(2024, 4, 1, 8, 30), changefreq: 'weekly', priority: 0.5 },
    { loc: 'https://www.example.com/bücher/étagère', lastmod: utc(2024, 4, 1, 8, 30, 15, 250) },
    { loc: 'https://www.example.com/plain', lastmod: null },
  ],
  truncated: false,
  errors: [],
};

describe('parseSitemap', () => {
  it('reads a urlset: entities, CDATA, whitespace, optional fields, extension elements ignored', async () => {
    expect(await parseSitemap(fixture('urlset.xml'))).toEqual(URLSET);
  });

  it('reads a sitemap index (here with a namespace prefix)', async () => {
    expect(await parseSitemap(fixture('index.xml'))).toEqual({
      kind: 'index',
      entries: [
        { loc: 'https://www.example.com/sitemap1.xml.gz', lastmod: utc(2004, 9, 1, 18, 23, 17) },
        { loc: 'https://www.example.com/sitemap2.xml.gz', lastmod: utc(2005, 0, 1) },
        { loc: 'https://www.example.com/sitemap3.xml', lastmod: null },
      ],
      truncated: false,
      errors: [],
    });
  });

  it('reads a stream in any chunking, characters and all', async () => {
    for (const size of [1, 7, 64, 100_000]) expect(await parseSitemap(chunked(fixture('urlset.xml'), size))).toEqual(URLSET);
  });

  it('gunzips by the magic bytes, from a buffer or a stream split inside the magic', async () => {
    const gz = gzipSync(fixture('urlset.xml'));
    expect(await parseSitemap(gz)).toEqual(URLSET);
    expect(await parseSitemap(chunked(gz, 1))).toEqual(URLSET);
    // Two gzip members back to back are one file.
    const xml = fixture('urlset.xml');
    expect(await parseSitemap(Buffer.concat([gzipSync(xml.subarray(0, 300)), gzipSync(xml.subarray(300))]))).toEqual(URLSET);
  });

  it('keeps what a corrupt gzip stream gave before it broke', async () => {
    const gz = gzipSync(urlset(2_000));
    const result = await parseSitemap(gz.subarray(0, Math.floor(gz.length / 2)));
    expect(result.kind).toBe('urlset');
    expect(result.entries.length).toBeGreaterThan(100);
    expect(result.entries.length).toBeLessThan(2_000);
    expect(result.entries[0]).toEqual({ loc: 'https://big.example/0', lastmod: null });
    expect(result.truncated).toBe(false);
    expect(result.errors.at(-1)).toMatch(/^could not read the input: /);
  });

  it('a file cut short keeps its complete entries and says the XML is unfinished', async () => {
    const result = await parseSitemap(fixture('truncated.xml'));
    expect(result.entries).toEqual([URLSET.entries[0]]);
    expect(result.truncated).toBe(false);
    expect(result.errors.length).toBeGreaterThan(0);
    expect(result.errors.every((e) => e.startsWith('XML: '))).toBe(true);
  });

  it('reads through malformed XML, reporting each fault', async () => {
    const result = await parseSitemap(fixture('malformed.xml'));
    expect(result.entries.map((e) => e.loc)).toEqual(['https://a.example/?x=1&y=2', 'https://a.example/unclosed', 'https://a.example/after', 'https://a.example/attr']);
    expect(result.errors.length).toBeGreaterThanOrEqual(3);
    expect(result.errors.every((e) => /^XML: .+ \(line \d+, column \d+\)$/.test(e))).toBe(true);
    expect(result.truncated).toBe(false);
  });

  it('rejects bad entries and drops bad fields, one error each, without stopping', async () => {
    const result = await parseSitemap(fixture('bad-entries.xml'));
    expect(result.entries).toEqual([
      { loc: 'https://ok.example/1', lastmod: null },
      { loc: 'https://ok.example/2', lastmod: null },
      { loc: 'https://ok.example/3', lastmod: null },
      { loc: 'https://ok.example/4', lastmod: null, priority: 0.8 },
    ]);
    expect(result.errors).toEqual([
      'entry 1: no <loc>',
      'entry 2 ("/relative/path"): <loc> is not an absolute URL',
      'entry 3 ("ftp://files.example/x"): <loc> is not http(s)',
      'entry 4 ("https://ok.example/1"): invalid <lastmod> "2024-13-01"',
      'entry 4 ("https://ok.example/1"): invalid <changefreq> "sometimes"',
      'entry 4 ("https://ok.example/1"): invalid <priority> "1.5"',
      'entry 5 ("https://ok.example/2"): invalid <lastmod> "yesterday"',
      'entry 5 ("https://ok.example/2"): invalid <priority> "high"',
      'entry 6 ("https://ok.example/3"): invalid <lastmod> "2024-02-30"',
      'entry 7: no <loc>',
      'entry 8 ("https://ok.example/4"): invalid <lastmod> "2024-02-29T25:00:00Z"',
    ]);
    expect(result.truncated).toBe(false);
  });

  it('says when a document is not a sitemap', async () => {
    const svg = Buffer.from('<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"><a href="https://a.example/"/></svg>');
    expect(await parseSitemap(svg)).toEqual({ kind: 'unknown', entries: [], truncated: false, errors: ['not a sitemap: root element <svg>'] });
    expect(await parseSitemap(Buffer.alloc(0))).toEqual({ kind: 'unknown', entries: [], truncated: false, errors: ['not a sitemap: no root element'] });
    const html = await parseSitemap(Buffer.from('<!doctype html><html><body>hi'));
    expect(html.kind).toBe('unknown');
    expect(html.entries).toEqual([]);
  });
});

describe('parseSitemap limits', () => {
  it('stops at maxEntries, keeping the first ones; exactly the limit is not truncated', async () => {
    const over = await parseSitemap(urlset(50_001));
    expect(over.entries.length).toBe(50_000);
    expect(over.entries.at(-1)?.loc).toBe('https://big.example/49999');
    expect(over.truncated).toBe(true);
    expect(over.errors).toEqual(['stopped at maxEntries (50000): more entries follow']);
    const exact = await parseSitemap(urlset(50_000));
    expect(exact.entries.length).toBe(50_000);
    expect(exact.truncated).toBe(false);
    expect(exact.errors).toEqual([]);
  });

  it('stops an index at maxSitemaps', async () => {
    const sitemaps = Array.from({ length: 12 }, (_, i) => `<sitemap><loc>https://a.example/s${i}.xml</loc></sitemap>`).join('');
    const result = await parseSitemap(Buffer.from(`<sitemapindex>${sitemaps}</sitemapindex>`), { maxSitemaps: 10 });
    expect(result.kind).toBe('index');
    expect(result.entries.map((e) => e.loc)).toEqual(Array.from({ length: 10 }, (_, i) => `https://a.example/s${i}.xml`));
    expect(result.truncated).toBe(true);
    expect(result.errors).toEqual(['stopped at maxSitemaps (10): more entries follow']);
  });

  it('stops at maxBytes of uncompressed input, keeping the entries before the cut', async () => {
    const xml = urlset(1_000);
    const cut = xml.indexOf('https://big.example/500<') + 5;
    const result = await parseSitemap(chunked(xml, 333), { maxBytes: cut });
    expect(result.entries.length).toBe(500);
    expect(result.truncated).toBe(true);
    expect(result.errors).toEqual([`stopped at maxBytes (${cut} bytes uncompressed): the file is longer`]);
    expect((await parseSitemap(xml, { maxBytes: xml.length })).truncated).toBe(false);
  });

  it('a gzip bomb stops at maxBytes: 128 MiB of whitespace costs 50 MB of reading', async () => {
    // 128 MiB of spaces inside a urlset, gzipped to ~130 KB.
    const oneMiB = Buffer.alloc(1 << 20, 0x20);
    const gz = gzipSync(Buffer.concat([Buffer.from('<urlset><url><loc>https://bomb.example/</loc></url>'), ...Array.from({ length: 128 }, () => oneMiB)]), { level: 9 });
    expect(gz.length).toBeLessThan(200_000);
    const started = performance.now();
    const result = await parseSitemap(Readable.from([gz]));
    expect(result.entries).toEqual([{ loc: 'https://bomb.example/', lastmod: null }]);
    expect(result.truncated).toBe(true);
    expect(result.errors).toEqual(['stopped at maxBytes (52428800 bytes uncompressed): the file is longer']);
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it('rejects an over-long <loc> without holding it all', async () => {
    const long = `https://a.example/${'x'.repeat(3_000)}`;
    const result = await parseSitemap(Buffer.from(`<urlset><url><loc>${long}</loc></url><url><loc>https://a.example/ok</loc></url></urlset>`));
    expect(result.entries).toEqual([{ loc: 'https://a.example/ok', lastmod: null }]);
    expect(result.errors).toHaveLength(1);
    expect(result.errors[0]).toMatch(/^entry 1 \("https:\/\/a\.example\/x+…"\): <loc> longer than 2048 characters$/);
  });

  it('keeps the first maxErrors messages and counts the rest', async () => {
    const result = await parseSitemap(urlset(250, (i) => `<url><loc>relative/${i}</loc></url>`), { maxErrors: 5 });
    expect(result.entries).toEqual([]);
    expect(result.errors).toHaveLength(6);
    expect(result.errors[0]).toBe('entry 1 ("relative/0"): <loc> is not an absolute URL');
    expect(result.errors[5]).toBe('… and 245 more errors');
  });
});

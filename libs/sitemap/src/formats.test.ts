import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { parseRfc822Date } from './lastmod.js';
import { sitemapLocationRule } from './location.js';
import { parseSitemap } from './parse.js';

const utc = Date.UTC;
const locs = (result: { entries: { loc: string }[] }) => result.entries.map((e) => e.loc);

describe('text sitemaps (sitemaps.org: one URL per line, UTF-8)', () => {
  const text = 'https://shop.example/\r\nhttps://shop.example/a?x=1&y=2\n\n   https://shop.example/b   \nhttps://shop.example/c';

  it('reads one URL a line: blank lines and surrounding spaces skipped, any line end', async () => {
    const result = await parseSitemap(Buffer.from(text));
    expect(result).toEqual({
      kind: 'urlset',
      entries: ['https://shop.example/', 'https://shop.example/a?x=1&y=2', 'https://shop.example/b', 'https://shop.example/c'].map((loc) => ({ loc, lastmod: null })),
      truncated: false,
      errors: [],
    });
  });

  it('reads a stream split anywhere, a BOM and a gzip the same', async () => {
    const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(`\n${text}\n`)]);
    const expected = locs(await parseSitemap(Buffer.from(text)));
    for (const size of [1, 2, 7]) {
      const chunks: Buffer[] = [];
      for (let i = 0; i < bytes.length; i += size) chunks.push(bytes.subarray(i, i + size));
      expect(locs(await parseSitemap(Readable.from(chunks)))).toEqual(expected);
    }
    expect(locs(await parseSitemap(gzipSync(bytes)))).toEqual(expected);
  });

  it('reports a line that is no absolute http(s) URL and goes on', async () => {
    const result = await parseSitemap(Buffer.from('https://a.example/1\nshop.example/relative\nftp://a.example/f\nhttps://a.example/2\n'));
    expect(locs(result)).toEqual(['https://a.example/1', 'https://a.example/2']);
    expect(result.errors).toEqual(['line 2 ("shop.example/relative"): is not an absolute URL', 'line 3 ("ftp://a.example/f"): is not http(s)']);
  });

  it('stops at maxEntries lines and at maxBytes', async () => {
    const lines = Array.from({ length: 30 }, (_, i) => `https://a.example/${i}`).join('\n');
    const capped = await parseSitemap(Buffer.from(lines), { maxEntries: 10 });
    expect(capped.entries).toHaveLength(10);
    expect(capped.truncated).toBe(true);
    const cut = await parseSitemap(Buffer.from(lines), { maxBytes: 45 });
    expect(locs(cut)).toEqual(['https://a.example/0', 'https://a.example/1']);
    expect(cut.truncated).toBe(true);
  });

  it('text that holds no URL is not a sitemap', async () => {
    const result = await parseSitemap(Buffer.from('Service unavailable, try again later\n'));
    expect(result.kind).toBe('unknown');
    expect(result.entries).toEqual([]);
  });
});

describe('feeds as sitemaps (sitemaps.org: RSS 2.0 and Atom 1.0)', () => {
  it('RSS 2.0: each item\'s <link>, else a <guid> that is a URL; <pubDate> as lastmod; the channel\'s own link is no entry', async () => {
    const rss = `<?xml version="1.0"?>
<rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom"><channel>
  <title>News</title><link>https://news.example/</link>
  <atom:link href="https://news.example/feed" rel="self"/>
  <item><title>One</title><link>https://news.example/2025/one</link><guid isPermaLink="false">id-1</guid><pubDate>Tue, 04 Mar 2025 09:15:00 +0100</pubDate></item>
  <item><title>Two</title><guid>https://news.example/2025/two</guid><pubDate>04 Mar 25 10:00 GMT</pubDate></item>
  <item><title>Three &amp; more</title><link>https://news.example/q?a=1&amp;b=<![CDATA[2]]></link><pubDate>yesterday</pubDate></item>
  <item><title>No link</title><guid>not-a-url</guid></item>
</channel></rss>`;
    const result = await parseSitemap(Buffer.from(rss));
    expect(result.kind).toBe('urlset');
    expect(result.entries).toEqual([
      { loc: 'https://news.example/2025/one', lastmod: utc(2025, 2, 4, 8, 15) },
      { loc: 'https://news.example/2025/two', lastmod: utc(2025, 2, 4, 10, 0) },
      { loc: 'https://news.example/q?a=1&b=2', lastmod: null },
    ]);
    expect(result.errors).toEqual(['entry 3 ("https://news.example/q?a=1&b=2"): invalid <pubDate> "yesterday"', 'entry 4: no <link>']);
  });

  it('Atom 1.0: each entry\'s first alternate <link href> (rel absent or alternate), <updated> as lastmod', async () => {
    const atom = `<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <title>Blog</title><link href="https://blog.example/" /><link rel="self" href="https://blog.example/atom.xml" /><updated>2025-01-02T00:00:00Z</updated>
  <entry><title>A</title><link rel="edit" href="https://blog.example/a/edit"/><link href="https://blog.example/a"/><link rel="alternate" type="text/plain" href="https://blog.example/a.txt"/><updated>2025-01-01T12:00:00+02:00</updated></entry>
  <entry><title>B</title><link rel="alternate" href="https://blog.example/b"/><published>2024-12-31</published></entry>
  <entry><title>C</title><link rel="enclosure" href="https://blog.example/c.mp3"/></entry>
</feed>`;
    const result = await parseSitemap(Buffer.from(atom));
    expect(result.kind).toBe('urlset');
    expect(result.entries).toEqual([
      { loc: 'https://blog.example/a', lastmod: utc(2025, 0, 1, 10, 0) },
      { loc: 'https://blog.example/b', lastmod: utc(2024, 11, 31) },
    ]);
    expect(result.errors).toEqual(['entry 3: no <link href>']);
  });

  it('RSS 1.0 (RDF): items under the root, not the channel\'s table of contents', async () => {
    const rdf = `<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/" xmlns:dc="http://purl.org/dc/elements/1.1/">
  <channel rdf:about="https://mag.example/"><title>Mag</title><link>https://mag.example/</link>
    <items><rdf:Seq><rdf:li resource="https://mag.example/x"/><rdf:li resource="https://mag.example/y"/></rdf:Seq></items></channel>
  <item rdf:about="https://mag.example/x"><title>X</title><link>https://mag.example/x</link><dc:date>2025-05-06</dc:date></item>
</rdf:RDF>`;
    const result = await parseSitemap(Buffer.from(rdf));
    expect(result.entries).toEqual([{ loc: 'https://mag.example/x', lastmod: utc(2025, 4, 6) }]);
  });
});

describe('parseRfc822Date (RSS <pubDate>)', () => {
  it.each([
    ['Sat, 01 Feb 2025 13:14:15 GMT', utc(2025, 1, 1, 13, 14, 15)],
    ['Sat, 1 Feb 2025 13:14:15 +0000', utc(2025, 1, 1, 13, 14, 15)],
    ['01 Feb 2025 13:14 -0500', utc(2025, 1, 1, 18, 14)],
    ['Saturday, 01 Feb 25 13:14:15 EST', utc(2025, 1, 1, 18, 14, 15)],
    ['01 feb 99 00:00:00 UT', utc(1999, 1, 1)],
    ['01 Feb 49 00:00:00 Z', utc(2049, 1, 1)],
    ['01 Feb 2025 13:14:15', null], // no zone: the instant is unknown
    ['31 Feb 2025 13:14:15 GMT', null],
    ['01 Foo 2025 13:14:15 GMT', null],
    ['01 Feb 2025 25:00:00 GMT', null],
    ['01 Feb 2025 13:14:15 +2400', null],
    ['2025-02-01T13:14:15Z', null],
    ['', null],
  ])('%s', (text, expected) => {
    expect(parseRfc822Date(text)).toBe(expected);
  });
});

describe('sitemapLocationRule (sitemaps.org "Sitemap file location")', () => {
  const urlset = sitemapLocationRule({ sitemapUrl: 'https://www.example.com/catalog/sitemap.xml', robotsOrigin: null }, 'urlset');

  it.each([
    ['https://www.example.com/catalog/', true],
    ['https://www.example.com/catalog/shoes?size=9', true],
    ['https://www.example.com/catalog', false],
    ['https://www.example.com/images/a.png', false],
    ['http://www.example.com/catalog/x', false],
    ['https://example.com/catalog/x', false],
    ['https://www.example.com:8443/catalog/x', false],
    ['https://www.example.com.evil.test/catalog/x', false],
  ])('a sitemap in /catalog/: %s → %s', (url, kept) => {
    expect(urlset(url)).toBe(kept);
  });

  it('the directory of a sitemap with a query is its path\'s, not the query\'s', () => {
    const rule = sitemapLocationRule({ sitemapUrl: 'https://example.com/index.php?route=feed/sitemap', robotsOrigin: null }, 'urlset');
    expect(rule('https://example.com/any/page')).toBe(true);
  });

  it('named by robots.txt: anything on that robots.txt\'s site', () => {
    const rule = sitemapLocationRule({ sitemapUrl: 'https://cdn.example.net/maps/www.xml', robotsOrigin: 'https://www.example.com' }, 'urlset');
    expect(rule('https://www.example.com/deep/page')).toBe(true);
    expect(rule('https://cdn.example.net/maps/x')).toBe(true);
    expect(rule('https://cdn.example.net/other')).toBe(false);
    expect(rule('https://blog.example.com/p')).toBe(false);
  });

  it('an index lists sitemaps of its own site, anywhere on it', () => {
    const rule = sitemapLocationRule({ sitemapUrl: 'https://www.example.com/maps/index.xml', robotsOrigin: null }, 'index');
    expect(rule('https://www.example.com/sitemap-1.xml')).toBe(true);
    expect(rule('https://static.example.com/sitemap-2.xml')).toBe(false);
  });
});

import { describe, expect, it } from 'vitest';
import { analyzePage, type PageAnalysisInput } from './analyze.js';
import { inlineAnalyzer, ThreadAnalyzer } from './analyzer.js';

const page = (i: number): PageAnalysisInput => ({
  body: Buffer.from(
    `<!doctype html><html lang="en"><head><meta charset="windows-1252"><title>Page ${i}</title>` +
      `<link rel="canonical" href="/c/${i}"><meta name="robots" content="nofollow"></head><body>` +
      `<p>Caf\xe9 number ${i} serves the best coffee in the whole town, every single day of the week.</p>` +
      `<a href="/a/${i}">a</a> <a href="http://other.example/b?x=${i}" rel="nofollow">b</a> <a href="mailto:x@y">m</a></body></html>`,
    'latin1',
  ),
  charset: null,
  url: `http://site.example/p/${i}`,
  maxLinks: 100,
  productToken: 'trawl',
});

describe('page analysis', () => {
  it('on the thread gives exactly what it gives on the calling thread', async () => {
    const warnings: unknown[] = [];
    const analyzer = new ThreadAnalyzer({ warn: (...args: unknown[]) => warnings.push(args) });
    try {
      const inputs = Array.from({ length: 20 }, (_, i) => page(i));
      const onThread = await Promise.all(inputs.map((input) => analyzer.analyze(input)));
      const inline = await Promise.all(inputs.map((input) => inlineAnalyzer.analyze(input)));
      expect(onThread).toEqual(inline);
      const first = onThread[0];
      expect(first?.charset).toBe('windows-1252');
      expect(first?.parsed.text.text).toContain('Café number 0');
      expect(first?.parsed.page.metaRobots.nofollow).toBe(true);
      expect(first?.parsed.links.map((l) => l.url)).toEqual(['http://site.example/a/0', 'http://other.example/b?x=0']);
      expect(typeof first?.simhash).toBe('bigint');
      expect(onThread[1]?.simhash).not.toBe(first?.simhash);
      // The thread started (no fall-back to the calling thread).
      expect(warnings).toEqual([]);
      expect(analyzer.onThread).toBe(true);
    } finally {
      await analyzer.close();
    }
  });

  it('a page with no words has no fingerprint, and markup that is no HTML at all still parses', async () => {
    const analyzer = new ThreadAnalyzer();
    try {
      const empty = await analyzer.analyze({ ...page(0), body: Buffer.from('<html><body><a href="/x">   </a></body></html>') });
      expect(empty.simhash).toBeNull();
      expect(empty.parsed.links.map((l) => l.url)).toEqual(['http://site.example/x']);
      const junk = await analyzer.analyze({ ...page(0), body: Buffer.from([0xff, 0x00, 0x3c, 0x3c, 0x61, 0xfe]) });
      expect(junk.parsed.links).toEqual([]);
      expect(junk).toEqual(analyzePage({ ...page(0), body: Buffer.from([0xff, 0x00, 0x3c, 0x3c, 0x61, 0xfe]) }));
    } finally {
      await analyzer.close();
    }
  });

  it('falls back to the calling thread, once and said, when the thread cannot start', async () => {
    const warnings: unknown[] = [];
    const analyzer = new ThreadAnalyzer({ warn: (...args: unknown[]) => warnings.push(args) }, { entry: new URL('./no-such-thread-module.js', import.meta.url).href });
    try {
      expect(await analyzer.analyze(page(1))).toEqual(analyzePage(page(1)));
      expect(await analyzer.analyze(page(2))).toEqual(analyzePage(page(2)));
      expect(warnings).toHaveLength(1);
      expect(analyzer.onThread).toBe(false);
    } finally {
      await analyzer.close();
    }
  });

  it('after close, the next page starts a new thread', async () => {
    const analyzer = new ThreadAnalyzer();
    const before = await analyzer.analyze(page(3));
    await analyzer.close();
    const after = await analyzer.analyze(page(3));
    expect(after).toEqual(before);
    await analyzer.close();
  });
});

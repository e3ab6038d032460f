import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PageForExport } from '@trawl/db';
import { decodeHtml, parsePage } from '@trawl/parse';
import { LocalContentStore } from '@trawl/store';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { markdownFile, markdownPath, parsePagesExport, textOfPage } from './export.js';

describe('parsePagesExport', () => {
  it.each([
    [{}, { format: 'text', images: 'drop' }],
    [{ format: 'text' }, { format: 'text', images: 'drop' }],
    [{ format: 'jsonl', images: 'alt' }, { format: 'jsonl', images: 'alt' }],
    [{ format: 'markdown', out: 'md', images: 'link' }, { format: 'markdown', images: 'link', out: 'md' }],
  ])('%j', (flags, expected) => {
    expect(parsePagesExport(flags)).toEqual(expected);
  });

  it.each([
    [{ format: 'xml' }, ['--format: expected text, jsonl, markdown, got "xml"']],
    [{ format: 'markdown' }, ['--out: --format markdown writes one file per page and needs a directory (--out <dir>)']],
    [{ format: 'jsonl', out: 'x' }, ['--out: only with --format markdown (--format jsonl writes JSON Lines to stdout)']],
    [{ format: 'jsonl', images: 'yes' }, ['--images: expected drop, alt, link, got "yes"']],
    [{ format: 'text', images: 'alt' }, ['--images: only with --format jsonl or markdown (the text format has no images)']],
    [{ format: 'md', images: 'no' }, ['--format: expected text, jsonl, markdown, got "md"', '--images: expected drop, alt, link, got "no"']],
  ])('refuses %j, naming each bad flag', (flags, problems) => {
    expect(() => parsePagesExport(flags)).toThrow(expect.objectContaining({ problems }));
  });
});

describe('markdownFile', () => {
  it('writes YAML front matter that reads back, whatever the title holds', () => {
    const title = 'Quotes " and: colons, # hashes, \\ backslash\nnewline — ünïcode';
    const file = markdownFile({ url: 'https://a.example/x?y=1', title, fetched_at: '2026-05-01T12:00:00.000Z', markdown: '# Hi\n\nText.' });
    const [, front, body] = file.split(/^---$/m);
    expect(parseYaml(front as string)).toEqual({ url: 'https://a.example/x?y=1', title, fetched_at: '2026-05-01T12:00:00.000Z' });
    expect(body).toBe('\n\n# Hi\n\nText.\n');
    expect(parseYaml(markdownFile({ url: 'u', title: null, fetched_at: 't', markdown: '' }).split(/^---$/m)[1] as string)).toMatchObject({ title: null });
  });
});

describe('markdownPath', () => {
  it.each([
    ['https://example.com/', /^example\.com\/index-[0-9a-f]{8}\.md$/],
    ['https://example.com/docs/Intro%20Page.html', /^example\.com\/docs-Intro-Page-[0-9a-f]{8}\.md$/],
    ['http://127.0.0.1:8080/a/b?page=2', /^127\.0\.0\.1_8080\/a-b-page-2-[0-9a-f]{8}\.md$/],
    ['https://example.com/../../etc/passwd', /^example\.com\/etc-passwd-[0-9a-f]{8}\.md$/],
    [`https://example.com/${'x'.repeat(500)}`, /^example\.com\/x{80}-[0-9a-f]{8}\.md$/],
  ])('%s', (url, expected) => {
    expect(markdownPath(url)).toMatch(expected);
  });

  it('gives URLs that slug alike their own files', () => {
    expect(markdownPath('https://example.com/a-b')).not.toBe(markdownPath('https://example.com/a/b'));
  });
});

describe('textOfPage', () => {
  const ARTICLE = `<!doctype html><html><head><meta charset="windows-1252"><title>Caf\xe9</title></head>
<body><nav><a href="/">Home</a></nav><article><h1>Le caf\xe9</h1><p>Un caf\xe9 cr\xe8me, deux croissants et le journal du matin.</p></article></body></html>`;
  const row = (fields: Partial<PageForExport>): PageForExport => ({
    url: 'http://site.example/cafe',
    status: 200,
    contentType: 'text/html',
    charset: null,
    fetchedAt: new Date(0),
    storageKey: null,
    contentHash: null,
    contentLength: null,
    redirectTo: null,
    truncated: false,
    bodySkipped: false,
    duplicateKind: null,
    duplicateOfUrl: null,
    duplicateDistance: null,
    title: null,
    description: null,
    language: null,
    canonicalUrl: null,
    wordCount: null,
    textKey: null,
    renderedKey: null,
    ...fields,
  });
  let dir = '';
  let store: LocalContentStore;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'trawl-export-text-'));
    store = new LocalContentStore({ dir, fsync: false });
  });
  afterEach(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('extracts the text from the stored body, decoded as the crawl decoded it: the text the crawl counted', async () => {
    const body = Buffer.from(ARTICLE, 'latin1');
    // What the crawl's page analysis does: decode with the header's charset (none here: the
    // markup's), then one parse for links and text.
    const decoded = decodeHtml(body, null);
    const { text: crawled } = parsePage(decoded.text, 'http://site.example/cafe');
    expect(crawled.text).toContain('Un café crème');
    const { key } = await store.put(body);
    const text = await textOfPage(store, row({ storageKey: key, charset: decoded.charset, wordCount: crawled.wordCount }));
    expect(text).toBe(crawled.text);
  });

  it('reads a stored text as it is, takes a rendered page\'s text from its DOM, and gives null without words or source', async () => {
    const stored = await store.put(Buffer.from('the text as stored'));
    expect(await textOfPage(store, row({ textKey: stored.key, wordCount: 4 }))).toBe('the text as stored');
    const shell = await store.put(Buffer.from('<html><body><div id="root"></div></body></html>'));
    const dom = await store.put(Buffer.from('<html><body><main><p>Rendered words, in UTF-8: naïve café.</p></main></body></html>', 'utf8'));
    expect(await textOfPage(store, row({ storageKey: shell.key, renderedKey: dom.key, charset: 'windows-1252', wordCount: 6 }))).toBe('Rendered words, in UTF-8: naïve café.');
    expect(await textOfPage(store, row({ storageKey: shell.key, wordCount: 0 }))).toBeNull();
    expect(await textOfPage(store, row({ storageKey: null, wordCount: 12 }))).toBeNull();
    expect(await textOfPage(store, row({ storageKey: `sha256:${'0'.repeat(64)}`, wordCount: 12 }))).toBeNull();
  });
});

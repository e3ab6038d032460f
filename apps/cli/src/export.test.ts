import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { markdownFile, markdownPath, parsePagesExport } from './export.js';

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

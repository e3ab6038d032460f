import { describe, expect, it } from 'vitest';
import { DEFAULT_SKIP_EXTENSIONS, extensionSet, ignoredExtension } from './extensions.js';

const defaults = extensionSet(DEFAULT_SKIP_EXTENSIONS);

describe('ignoredExtension', () => {
  it.each([
    ['a PDF', 'http://a.example/files/report.pdf', 'pdf'],
    ['upper case', 'http://a.example/IMG_0001.JPG', 'jpg'],
    ['mixed case', 'http://a.example/Slides.PpTx', 'pptx'],
    ['an HTML page', 'http://a.example/index.html', null],
    ['no extension', 'http://a.example/about', null],
    ['the root', 'http://a.example/', null],
    ['a directory named like a file', 'http://a.example/report.pdf/', null],
    ['a directory with a dot, then a page', 'http://a.example/v1.zip/page', null],
    ['only the query names a PDF', 'http://a.example/download?file=report.pdf', null],
    ['a PDF with a query', 'http://a.example/report.pdf?version=2', 'pdf'],
    ['a fragment does not count', 'http://a.example/page#x.pdf', null],
    ['the host does not count', 'http://files.pdf.example/', null],
    ['a dot file has no extension', 'http://a.example/.zip', null],
    ['a trailing dot', 'http://a.example/report.', null],
    ['a version number', 'http://a.example/release/v1.2', null],
    ['an extension inside the name', 'http://a.example/report.pdf.html', null],
    ['a compressed tarball', 'http://a.example/src.tar.gz', 'gz'],
    ['percent-encoded dot', 'http://a.example/report%2Epdf', 'pdf'],
    ['percent-encoded name', 'http://a.example/r%C3%A9sum%C3%A9.pdf', 'pdf'],
    ['a stray percent', 'http://a.example/100%.pdf', 'pdf'],
    ['path parameters', 'http://a.example/photo.png;jsessionid=abc', 'png'],
    ['a font', 'https://a.example/fonts/x.woff2', 'woff2'],
    ['not a URL', 'not a url.pdf', null],
  ])('%s: %s → %s', (_name, url, expected) => {
    expect(ignoredExtension(url, defaults)).toBe(expected);
  });

  it('prefers the longest multi-part entry', () => {
    expect(ignoredExtension('http://a.example/src.tar.gz', extensionSet(['gz', 'tar.gz']))).toBe('tar.gz');
    expect(ignoredExtension('http://a.example/src.tar.gz', extensionSet(['tar.gz']))).toBe('tar.gz');
    expect(ignoredExtension('http://a.example/src.gz', extensionSet(['tar.gz']))).toBeNull();
  });

  it('matches nothing with an empty set', () => {
    expect(ignoredExtension('http://a.example/report.pdf', new Set())).toBeNull();
  });

  it('matches only what the set names', () => {
    const onlyPdf = extensionSet(['pdf']);
    expect(ignoredExtension('http://a.example/report.pdf', onlyPdf)).toBe('pdf');
    expect(ignoredExtension('http://a.example/photo.jpg', onlyPdf)).toBeNull();
  });
});

describe('extensionSet', () => {
  it('trims, lowercases, drops leading dots and empty entries', () => {
    expect([...extensionSet([' .PDF', 'Jpg', '', '..tar.gz', '  '])]).toEqual(['pdf', 'jpg', 'tar.gz']);
  });
});

describe('DEFAULT_SKIP_EXTENSIONS', () => {
  it('covers the families of files that are never HTML', () => {
    for (const ext of ['pdf', 'jpg', 'png', 'gif', 'svg', 'mp3', 'mp4', 'zip', 'gz', 'docx', 'xlsx', 'pptx', 'exe', 'woff2', 'css']) {
      expect(defaults.has(ext), ext).toBe(true);
    }
  });

  it('names no extension a page is served under', () => {
    for (const ext of ['html', 'htm', 'xhtml', 'php', 'asp', 'aspx', 'jsp', 'cgi', 'pl', 'shtml', 'cfm']) {
      expect(defaults.has(ext), ext).toBe(false);
    }
  });

  it('is lowercase, dot-free and without repeats', () => {
    expect(extensionSet(DEFAULT_SKIP_EXTENSIONS).size).toBe(DEFAULT_SKIP_EXTENSIONS.length);
    for (const ext of DEFAULT_SKIP_EXTENSIONS) expect(ext).toMatch(/^[a-z0-9]+(\.[a-z0-9]+)*$/);
  });
});

import iconv from 'iconv-lite';
import { describe, expect, it } from 'vitest';
import { decodeHtml } from './decode.js';

const html = (head: string, body: string) => `<!doctype html><html><head>${head}</head><body>${body}</body></html>`;

describe('decodeHtml', () => {
  it.each([
    ['UTF-8 declared in the header', Buffer.from(html('', 'café ☕'), 'utf8'), 'utf-8', 'café ☕', 'header'],
    ['ISO-8859-1 in the header (decoded as windows-1252, its superset)', iconv.encode(html('', 'café'), 'latin1'), 'ISO-8859-1', 'café', 'header'],
    ['windows-1252 by <meta charset>, curly quotes', iconv.encode(html('<meta charset="windows-1252">', '“quoted” – dash'), 'win1252'), null, '“quoted” – dash', 'meta'],
    ['Shift_JIS by http-equiv', iconv.encode(html('<meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS">', '日本語のページ'), 'Shift_JIS'), null, '日本語のページ', 'meta'],
    ['UTF-8 BOM beats a wrong header', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(html('', 'naïve'), 'utf8')]), 'iso-8859-1', 'naïve', 'bom'],
    ['UTF-16LE BOM', Buffer.concat([Buffer.from([0xff, 0xfe]), iconv.encode(html('', 'Grüße'), 'utf16le')]), null, 'Grüße', 'bom'],
    ['undeclared, valid UTF-8', Buffer.from(html('', 'Zürich'), 'utf8'), null, 'Zürich', 'utf-8-valid'],
    ['undeclared, not UTF-8: windows-1252', iconv.encode(html('', 'Zürich'), 'latin1'), null, 'Zürich', 'fallback'],
  ])('%s', (_name, body, header, expected, source) => {
    const decoded = decodeHtml(body, header);
    expect(decoded.text).toContain(expected);
    expect(decoded.source).toBe(source);
  });

  it('turns invalid bytes in declared UTF-8 into U+FFFD instead of failing', () => {
    const body = Buffer.concat([Buffer.from('<p>ok '), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from(' end</p>')]);
    const decoded = decodeHtml(body, 'utf-8');
    expect(decoded.text).toContain('ok ');
    expect(decoded.text).toContain(' end');
    expect(decoded.text).toContain('\ufffd');
  });

  it('survives an unknown charset label and binary junk', () => {
    expect(decodeHtml(Buffer.from('<p>x</p>'), 'x-klingon').text).toContain('x');
    expect(() => decodeHtml(Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 7919) % 256)), null)).not.toThrow();
    expect(decodeHtml(Buffer.alloc(0), null).text).toBe('');
  });
});

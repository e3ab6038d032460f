import { describe, expect, it } from 'vitest';
import { parseContentType } from './content-type.js';

describe('parseContentType', () => {
  it.each([
    [undefined, null, null],
    ['', null, null],
    ['text/html', 'text/html', null],
    ['Text/HTML; Charset=UTF-8', 'text/html', 'utf-8'],
    ['text/html;charset="ISO-8859-1"', 'text/html', 'iso-8859-1'],
    ['text/html; foo=bar; charset=windows-1252; charset=utf-8', 'text/html', 'windows-1252'],
    ['application/xhtml+xml ; charset = utf-8 ', 'application/xhtml+xml', 'utf-8'],
    ['text/html; charset=', 'text/html', null],
    ['html', null, null],
    ['text/html garbage', null, null],
    [['text/plain', 'text/html; charset=utf-8'], 'text/html', 'utf-8'],
  ])('%j → %s, %s', (header, contentType, charset) => {
    expect(parseContentType(header)).toEqual({ contentType, charset });
  });
});

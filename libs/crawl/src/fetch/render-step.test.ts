import { describe, expect, it } from 'vitest';
import { hasScriptTag } from './render-step.js';

describe('hasScriptTag', () => {
  const pieces = ['<script', '<SCRIPT', '<ScRiPt', '<scrip', 'script', '<', 's', 'x', ' ', '>', '_', '1', '-', '\u00e9', '<scripts', '<script>', '<script\n'];
  let seed = 3;
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);

  it('answers as /<script\\b/i does over the bytes read as latin1, on random bodies', () => {
    for (let n = 0; n < 5000; n++) {
      const text = Array.from({ length: Math.floor(random() * 8) }, () => pieces[Math.floor(random() * pieces.length)]).join('');
      const bytes = Buffer.from(text, 'latin1');
      expect(hasScriptTag(bytes), JSON.stringify(text)).toBe(/<script\b/i.test(bytes.toString('latin1')));
    }
  });

  it('finds a tag at the very end and ignores names that only start alike', () => {
    expect(hasScriptTag(Buffer.from('<p>text</p><script'))).toBe(true);
    expect(hasScriptTag(Buffer.from('<p>a <scripted> b</p>'))).toBe(false);
    expect(hasScriptTag(Buffer.from('the word script in prose'))).toBe(false);
    expect(hasScriptTag(Buffer.alloc(0))).toBe(false);
  });
});

import { describe, expect, it } from 'vitest';
import { RenderErrorCode } from '../errors.js';
import { FakeRenderer } from './fake-renderer.js';

describe('FakeRenderer', () => {
  it('answers from its function, records calls, and refuses after close', async () => {
    const renderer = new FakeRenderer((url) => `<a href="${url}x">x</a>`);
    const fetch = async (): Promise<never> => {
      throw new Error('unused');
    };
    const result = await renderer.render('https://h.example/', { fetch });
    expect(result.ok && result.html).toBe('<a href="https://h.example/x">x</a>');
    await renderer.close();
    const late = await renderer.render('https://h.example/2', { fetch });
    expect(late.ok === false && (late.error.code as string)).toBe(RenderErrorCode.Closed);
    expect(renderer.calls.map((c) => c.url)).toEqual(['https://h.example/', 'https://h.example/2']);
  });
});

import { describe, expect, it } from 'vitest';
import { RenderErrorCode } from '../errors.js';
import { ChromiumRenderer } from './renderer.js';

// The failures that need no running browser.
const fetch = async (): Promise<never> => {
  throw new Error('no fetch expected');
};

describe('ChromiumRenderer without a browser', () => {
  it('a browser that cannot start gives ERR_RENDER_BROWSER, and close still works', async () => {
    const renderer = new ChromiumRenderer({ pool: { executablePath: '/nonexistent/chromium' } });
    const result = await renderer.render('http://127.0.0.1:9/', { fetch });
    expect(result.ok === false && (result.error.code as string)).toBe(RenderErrorCode.Browser);
    expect(renderer.stats()).toMatchObject({ pagesOpen: 0, browsersLaunched: 1, retiredFor: { 'launch-failed': 1 } });
    await renderer.close();
  });

  it('a URL that does not parse gives ERR_RENDER_DOCUMENT', async () => {
    const renderer = new ChromiumRenderer();
    const result = await renderer.render('not a url', { fetch });
    expect(result.ok === false && [result.error.code as string, result.error.action]).toEqual([RenderErrorCode.Document, 'skip']);
    await renderer.close();
  });

  it('an aborted signal ends the render before it takes a page', async () => {
    const renderer = new ChromiumRenderer();
    const result = await renderer.render('http://127.0.0.1:9/', { fetch, signal: AbortSignal.abort() });
    expect(result.ok === false && (result.error.code as string)).toBe(RenderErrorCode.Aborted);
    expect(renderer.stats().browsersLaunched).toBe(0);
    await renderer.close();
  });
});

import { describe, expect, it } from 'vitest';
import { isExecutable, rolesGivenBrowser } from './render.js';

const render = (chromiumPath: string, mode: 'never' | 'auto' | 'always' = 'auto') => ({ mode, chromiumPath });

describe('a worker\'s roles and the browser', () => {
  it('keeps every role where Chromium is, or where nothing renders', () => {
    const roles = new Set(['fetch', 'process', 'render'] as const);
    expect(rolesGivenBrowser(roles, render('/chromium'), () => true)).toEqual({ roles, dropped: null });
    expect(rolesGivenBrowser(roles, render('/missing', 'never'), () => false)).toEqual({ roles, dropped: null });
    expect(rolesGivenBrowser(new Set(['fetch', 'process'] as const), render('/missing'), () => false).dropped).toBeNull();
  });

  it('without Chromium, a worker that fetches drops render (and says why); one that only renders refuses to start, naming the setting', () => {
    const given = rolesGivenBrowser(new Set(['fetch', 'process', 'render'] as const), render('/no/such/chromium'));
    expect([...given.roles]).toEqual(['fetch', 'process']);
    expect(given.dropped).toContain('TRAWL_RENDER_CHROMIUM (/no/such/chromium)');
    expect(() => rolesGivenBrowser(new Set(['render'] as const), render('/no/such/chromium'))).toThrow(/TRAWL_RENDER_CHROMIUM.*\/no\/such\/chromium/s);
  });

  it('isExecutable tells an executable from a plain file and a missing one', () => {
    expect(isExecutable(process.execPath)).toBe(true);
    expect(isExecutable(new URL(import.meta.url).pathname)).toBe(false);
    expect(isExecutable('/no/such/file')).toBe(false);
  });
});

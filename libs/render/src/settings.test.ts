import { loadConfig } from '@trawl/config';
import { describe, expect, it } from 'vitest';
import type { ChromiumRendererOptions } from './chromium/renderer.js';
import { renderSettingsFrom } from './settings.js';

describe('renderSettingsFrom', () => {
  it('passes TRAWL_RENDER_* to the pool, the policy, the learner and the cache', () => {
    const settings = renderSettingsFrom(
      loadConfig({ env: { TRAWL_RENDER: 'auto', TRAWL_RENDER_CONCURRENCY: '4', TRAWL_RENDER_CONTEXT: 'page', TRAWL_RENDER_ALLOW_HOSTS: 'cdn.example', TRAWL_RENDER_SAMPLE_PAGES: '5', TRAWL_RENDER_CACHE_BYTES: '1048576' } }).render,
    );
    expect(settings.mode).toBe('auto');
    expect(settings.chromium.pool).toMatchObject({ maxOpenPages: 4, contextScope: 'page', executablePath: '/usr/bin/chromium' });
    expect(settings.chromium.policy).toMatchObject({ allowHosts: ['cdn.example'], allowOtherHosts: false, blockResourceTypes: ['image', 'media', 'font'] });
    expect(settings.learner.sampleSize).toBe(5);
    expect(settings.cache).toEqual({ maxBytes: 1_048_576, maxEntryBytes: 1_048_576 });
    // The shape ChromiumRenderer takes, checked by the compiler.
    const options: ChromiumRendererOptions = settings.chromium;
    expect(options.timeoutMs).toBe(15_000);
  });
});

import type { RenderConfig } from '@trawl/config';
import type { MemoryCacheOptions } from './cache.js';
import { DEFAULT_LEARNER_SETTINGS, type RenderLearnerSettings } from './learner.js';
import { DEFAULT_REQUEST_POLICY, type RequestPolicySettings } from './policy.js';

/** What `new ChromiumRenderer(…)` takes, spelled without its types so this file loads no browser code. */
export interface ChromiumSettings {
  pool: {
    executablePath: string;
    maxOpenPages: number;
    pagesPerBrowser: number;
    maxBrowserMemoryBytes: number;
    contextScope: 'host' | 'page';
  };
  policy: RequestPolicySettings;
  timeoutMs: number;
  idleMs: number;
}

export interface RenderSettings {
  mode: RenderConfig['mode'];
  chromium: ChromiumSettings;
  learner: RenderLearnerSettings;
  cache: MemoryCacheOptions;
}

/** The render lib's settings from the process's configuration (TRAWL_RENDER_*). */
export function renderSettingsFrom(config: RenderConfig): RenderSettings {
  const policy: RequestPolicySettings = {
    ...DEFAULT_REQUEST_POLICY,
    allowOtherHosts: config.allowOtherHosts,
    allowHosts: config.allowHosts,
    maxRequestsPerPage: config.maxRequestsPerPage,
  };
  return {
    mode: config.mode,
    chromium: {
      pool: {
        executablePath: config.chromiumPath,
        maxOpenPages: config.maxOpenPages,
        pagesPerBrowser: config.pagesPerBrowser,
        maxBrowserMemoryBytes: config.maxBrowserMemoryBytes,
        contextScope: config.contextScope,
      },
      policy,
      timeoutMs: config.timeoutMs,
      idleMs: config.idleMs,
    },
    learner: {
      ...DEFAULT_LEARNER_SETTINGS,
      sampleSize: config.samplePages,
      sampleSpacing: config.sampleSpacing,
      minExtraLinks: config.minExtraLinks,
      minLinkGain: config.minLinkGain,
      reviewAfterMs: config.reviewAfterMs,
    },
    cache: { maxBytes: config.cacheBytes, maxEntryBytes: Math.min(config.cacheBytes, 4 * 1024 * 1024) },
  };
}

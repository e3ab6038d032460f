import type { RenderDeps } from '@trawl/crawl';
import { blockedReason } from '@trawl/fetch';
import { RedisHostVerdicts, RenderOverrides } from '@trawl/model';
import { LazyRenderer, MemorySubresourceCache, RenderLearner, renderSettingsFrom, ssrfCheckFrom } from '@trawl/render';
import { frontierOptions, type Runtime } from '@trawl/runtime';

/**
 * Rendering for a fetch stage, as TRAWL_RENDER_* say (undefined for `never`). The browser is built
 * on the first page that needs it: a worker that never renders never loads Playwright nor starts
 * Chromium. Its pages' requests go through the runtime's fetcher under the host gate (see
 * `renderUnderGate`), with the fetch lib's address rule asked first. The learner's per-host
 * verdicts are the crawl's (Redis), read through its memory.
 */
export function renderDepsOf(runtime: Runtime): RenderDeps | undefined {
  const { config } = runtime;
  if (config.render.mode === 'never') return undefined;
  const settings = renderSettingsFrom(config.render);
  return {
    renderer: new LazyRenderer(async () => {
      const { ChromiumRenderer } = await import('@trawl/render/chromium');
      runtime.logger.info({ executable: settings.chromium.pool.executablePath }, 'starting the headless browser for the first page to render');
      return new ChromiumRenderer(settings.chromium);
    }),
    mode: config.render.mode,
    // Verdicts in Redis: every worker of the crawl, and each restart, shares one host's samples.
    learner: new RenderLearner(settings.learner, runtime.clock, new RedisHostVerdicts(runtime.redis, config.namespace)),
    overrides: new RenderOverrides(runtime.redis, config.namespace, () => runtime.clock.now()),
    cache: new MemorySubresourceCache(settings.cache),
    ssrfCheck: ssrfCheckFrom((address) => blockedReason(address, { allowNetworks: config.fetch.allowNetworks })),
    timeoutMs: config.render.timeoutMs,
    maxHoldMs: frontierOptions(config, config.namespace, runtime.clock).fetchHoldMs,
  };
}

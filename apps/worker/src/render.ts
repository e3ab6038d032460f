import { accessSync, constants } from 'node:fs';
import { ConfigError } from '@trawl/config';
import type { RenderDeps, RenderHandOverDeps } from '@trawl/crawl';
import { blockedReason } from '@trawl/fetch';
import { RedisHostVerdicts, RenderOverrides } from '@trawl/model';
import { type ClassifierSettings, DEFAULT_CLASSIFIER_SETTINGS, LazyRenderer, MemorySubresourceCache, RenderLearner, renderSettingsFrom, ssrfCheckFrom } from '@trawl/render';
import { RenderQueue, RenderWorkers } from '@trawl/queue';
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
    classifier: classifierOf(config.render),
    cache: new MemorySubresourceCache(settings.cache),
    // Names resolve as the fetcher resolves them (its DNS cache, TRAWL_HOSTS_FILE): no second lookup per request.
    ssrfCheck: ssrfCheckFrom(
      (address) => blockedReason(address, { allowNetworks: config.fetch.allowNetworks }),
      (hostname) => runtime.fetcher.resolveAll(hostname),
    ),
    timeoutMs: config.render.timeoutMs,
    maxHoldMs: frontierOptions(config, config.namespace, runtime.clock).fetchHoldMs,
  };
}

/** The classifier's settings: other hosts' scripts run when the renderer may load any of them. */
function classifierOf(render: { allowOtherHosts: boolean; allowHosts: readonly string[] }): ClassifierSettings {
  return { ...DEFAULT_CLASSIFIER_SETTINGS, otherHostScripts: render.allowOtherHosts || render.allowHosts.length > 0 };
}

/** How long a fetch stage trusts its last answer to "is a render stage alive?" (asked only for pages to render). */
const ALIVE_ANSWER_MS = 1000;

/**
 * For a fetch stage without the `render` role (undefined for TRAWL_RENDER=never): it decides which
 * pages to render with the classifier and the operators' overrides, and hands them to the render
 * queue while a render stage is alive. Never loads Playwright.
 */
export function renderHandOverOf(runtime: Runtime): (RenderHandOverDeps & { close(): Promise<void> }) | undefined {
  const { config } = runtime;
  if (config.render.mode === 'never') return undefined;
  const settings = renderSettingsFrom(config.render);
  // BullMQ defines its scripts on the connection it is given; on the runtime's auto-pipelined
  // connection every batch of commands would then copy them all (ioredis's Pipeline does, per
  // batch): the producers' connection has no auto-pipelining and carries BullMQ's scripts already.
  const queue = new RenderQueue(runtime.queueRedis, config.namespace);
  const registry = new RenderWorkers(runtime.redis, config.namespace);
  let answer = { alive: false, until: 0 };
  return {
    mode: config.render.mode,
    // The crawl's shared verdicts: the render stage reports each handed-over sample's comparison there.
    learner: new RenderLearner(settings.learner, runtime.clock, new RedisHostVerdicts(runtime.redis, config.namespace)),
    overrides: new RenderOverrides(runtime.redis, config.namespace, () => runtime.clock.now()),
    classifier: classifierOf(config.render),
    queue,
    alive: async () => {
      const now = runtime.clock.now();
      if (now >= answer.until) answer = { alive: (await registry.alive(now)) > 0, until: now + ALIVE_ANSWER_MS };
      return answer.alive;
    },
    close: () => queue.close(),
  };
}

/** Whether `path` is a file this process may execute. */
export function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The roles a worker runs, given whether the browser is there. With the `render` role (the
 * default's) but no Chromium at TRAWL_RENDER_CHROMIUM (an image without the browser, say), a
 * worker that also fetches drops `render`: it hands the pages that need a browser to render
 * workers, or processes them unrendered while none is alive, instead of failing to start a
 * browser for each. A worker that only renders can do nothing without one: that is a bad
 * setting, and startup fails naming it. Returns the roles and, when `render` was dropped, why.
 */
export function rolesGivenBrowser<R extends string>(
  roles: ReadonlySet<R | 'render' | 'fetch'>,
  render: { mode: 'never' | 'auto' | 'always'; chromiumPath: string },
  executable: (path: string) => boolean = isExecutable,
): { roles: Set<R | 'render' | 'fetch'>; dropped: string | null } {
  const out = new Set(roles);
  if (!out.has('render') || render.mode === 'never' || executable(render.chromiumPath)) return { roles: out, dropped: null };
  if (!out.has('fetch')) {
    throw new ConfigError([
      `TRAWL_RENDER_CHROMIUM (render.chromiumPath): no executable at ${render.chromiumPath}, and this worker only renders (TRAWL_WORKER_ROLES without fetch): install Debian's chromium or run the image's renderer target`,
    ]);
  }
  out.delete('render');
  return { roles: out, dropped: `no executable at TRAWL_RENDER_CHROMIUM (${render.chromiumPath}): this worker renders nothing and hands pages that need a browser to render workers (processed unrendered while none is alive)` };
}

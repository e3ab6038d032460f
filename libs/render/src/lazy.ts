import type { TrawlError } from '@trawl/core';
import { renderError, RenderErrorCode } from './errors.js';
import type { Renderer, RenderOptions, RenderResult } from './types.js';

/**
 * A `Renderer` built on its first render: a process that never renders never loads the browser
 * code nor starts a browser. `close()` closes what was built (nothing, if nothing was). A build
 * that fails fails its render (ERR_RENDER_BROWSER) and is tried again by the next one; like every
 * renderer, this one never rejects.
 */
export class LazyRenderer implements Renderer {
  private building: Promise<Renderer> | null = null;
  private closed = false;

  constructor(private readonly build: () => Promise<Renderer>) {}

  /** Whether the renderer was built (a render was asked for). */
  get built(): boolean {
    return this.building !== null;
  }

  async render(url: string, options: RenderOptions): Promise<RenderResult> {
    if (this.closed) return failed(url, renderError(RenderErrorCode.Closed, 'the renderer is closed'));
    this.building ??= this.build();
    let renderer: Renderer;
    try {
      renderer = await this.building;
    } catch (error) {
      this.building = null;
      return failed(url, renderError(RenderErrorCode.Browser, `could not build the renderer: ${(error as Error).message}`, { cause: error }));
    }
    return renderer.render(url, options);
  }

  async close(): Promise<void> {
    this.closed = true;
    const renderer = await this.building?.catch(() => null);
    await renderer?.close();
  }
}

const failed = (url: string, error: TrawlError): RenderResult => ({
  ok: false,
  error,
  status: null,
  url,
  finalUrl: url,
  requests: [],
  timings: { queuedMs: 0, openMs: 0, renderMs: 0, totalMs: 0 },
});

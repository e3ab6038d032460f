import { RenderErrorCode, renderError } from '../errors.js';
import type { Renderer, RenderOptions, RenderResult } from '../types.js';

/** What a FakeRenderer answers for a URL: the rendered HTML, or a whole result (a failure, say). */
export type FakeRender = (url: string, options: RenderOptions) => string | RenderResult | Promise<string | RenderResult>;

/**
 * A Renderer without a browser, for the pipeline's tests: answers from a function, records every
 * call, refuses after close() as the real one does.
 */
export class FakeRenderer implements Renderer {
  readonly calls: Array<{ url: string; options: RenderOptions }> = [];
  private closed = false;

  constructor(private readonly answer: FakeRender) {}

  async render(url: string, options: RenderOptions): Promise<RenderResult> {
    this.calls.push({ url, options });
    const timings = { queuedMs: 0, openMs: 0, renderMs: 0, totalMs: 0 };
    if (this.closed) return { ok: false, url, finalUrl: url, status: null, error: renderError(RenderErrorCode.Closed, 'the renderer is closed'), requests: [], timings };
    const answer = await this.answer(url, options);
    if (typeof answer !== 'string') return answer;
    return { ok: true, url, finalUrl: url, status: 200, html: answer, requests: [{ url, resourceType: 'document', outcome: options.document === undefined ? 'fetched' : 'supplied', status: 200 }], timings };
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}

import { type ErrorAction, type ErrorCode, TrawlError } from '@trawl/core';

/**
 * Every code a render can fail with. They are this lib's own: @trawl/core's `ErrorCode` union does
 * not list them, so compare `error.code` as a string. A failed render is never the page's last
 * word: the pipeline keeps the HTML it fetched and may render again later.
 */
export const RenderErrorCode = {
  /** The page did not settle within the render timeout. */
  Timeout: 'ERR_RENDER_TIMEOUT',
  /** The top-level document was refused by the policy or its fetch failed. */
  Document: 'ERR_RENDER_DOCUMENT',
  /** The browser failed to start, crashed, or the page died under it. */
  Browser: 'ERR_RENDER_BROWSER',
  /** The caller's signal aborted the render. */
  Aborted: 'ERR_RENDER_ABORTED',
  /** The renderer was closed. */
  Closed: 'ERR_RENDER_CLOSED',
} as const;
export type RenderErrorCode = (typeof RenderErrorCode)[keyof typeof RenderErrorCode];

const ACTION: Record<RenderErrorCode, ErrorAction> = {
  ERR_RENDER_TIMEOUT: 'retry',
  ERR_RENDER_DOCUMENT: 'skip',
  ERR_RENDER_BROWSER: 'retry',
  ERR_RENDER_ABORTED: 'retry',
  ERR_RENDER_CLOSED: 'retry',
};

export function renderError(code: RenderErrorCode, message: string, extra: { cause?: unknown; details?: Record<string, unknown> } = {}): TrawlError {
  return new TrawlError(code as unknown as ErrorCode, message, { action: ACTION[code], ...extra });
}

/**
 * Thrown by a caller's `fetch` to refuse a request it will not make after all (another host's gate
 * was not free, its robots.txt is not cached): the page's request is recorded `blocked` with
 * `reason`, as a refusal by `beforeRequest` is, not `failed`.
 */
export class RequestRefused extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'RequestRefused';
  }
}

import { ErrorCode, isTrawlError, TrawlError } from '@trawl/core';
import type { FetchResult } from '@trawl/fetch';
import type { ContentStore } from '@trawl/store';

/** Media types parsed for links. Others are stored or skipped (TRAWL_NON_HTML), never parsed as HTML. */
export const HTML_TYPES: ReadonlySet<string> = new Set(['text/html', 'application/xhtml+xml']);

export function isHtml(result: Pick<FetchResult, 'contentType' | 'body'>): boolean {
  if (result.contentType) return HTML_TYPES.has(result.contentType);
  // No Content-Type: sniff the first bytes for markup.
  const head = result.body.subarray(0, 512).toString('latin1').trimStart().toLowerCase();
  return head.startsWith('<!doctype html') || head.startsWith('<html') || head.startsWith('<head') || head.startsWith('<body');
}

export interface StoredBody {
  storageKey: string;
  contentHash: string;
  storedBytes: number;
}

/**
 * Errors of the content store's file system that no retry can fix: the process must stop with
 * a clear message (and the crawl resume after the fix) rather than fetch the same pages again
 * and again.
 */
const FATAL_STORE_ERRORS = new Set(['ENOSPC', 'EDQUOT', 'EROFS', 'EACCES', 'EPERM']);

/** Store stage: content-addressed, so a body (or a page's text) already stored costs nothing more. */
export async function storeBody(store: ContentStore, body: Buffer, what = 'body'): Promise<StoredBody> {
  try {
    const put = await store.put(body);
    return { storageKey: put.key, contentHash: put.contentHash, storedBytes: put.storedBytes };
  } catch (error) {
    throw storeFailure(error, `could not store ${what}`);
  }
}

/** A storage error as the pipeline acts on it: fatal when the disk is full or read-only, else retried. */
export function storeFailure(error: unknown, what: string): unknown {
  if (isTrawlError(error)) return error;
  const code = (error as NodeJS.ErrnoException).code;
  const fatal = code !== undefined && FATAL_STORE_ERRORS.has(code);
  return new TrawlError(ErrorCode.Store, `${what}: ${(error as Error).message}`, { action: fatal ? 'fatal' : 'retry', cause: error });
}

import type { FetchJobContext } from '@trawl/queue';
import { fingerprint } from '@trawl/url';

/** One attempt at a fetch job, as the pipeline's stages see it: the job's context and its URL's fingerprint, computed once. */
export interface Attempt extends FetchJobContext {
  /** `url_hash` of the job's URL. */
  hash: Buffer;
}

/**
 * What the process stage knows of a page's job: the job, its URL's fingerprint, and whether the
 * page is urgent (its host had nothing else queued when it was handed off, so the host's next
 * fetch waits on its links: its analysis and its links' discovery go first).
 */
export type PageRef = Pick<Attempt, 'job' | 'hash'> & { urgent?: boolean };

export const attemptOf = (ctx: FetchJobContext): Attempt => ({ ...ctx, hash: fingerprint(ctx.job.url) });

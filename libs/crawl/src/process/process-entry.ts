import { classifyStatus, describeError, ErrorCode, isTrawlError, TrawlError } from '@trawl/core';
import type { FetchResult } from '@trawl/fetch';
import type { ProcessEntry } from '@trawl/frontier';
import type { Candidate } from '@trawl/model';
import { inScope, fingerprint } from '@trawl/url';
import type { PageRef } from '../attempt.js';
import type { PipelineDeps } from '../deps.js';
import { decodeHandedPage, type HandedPage, type StoredRef } from '../handed-page.js';
import { recordAndAck } from '../outcome.js';
import { recordOf } from '../record.js';
import type { LeaseRef } from '../records.js';
import { processFetched } from './page.js';

/** What the process stage works with. */
export type ProcessDeps = Pick<
  PipelineDeps,
  'store' | 'storeText' | 'duplicates' | 'archive' | 'counters' | 'clock' | 'analyzer' | 'discovery' | 'records' | 'acks' | 'policy' | 'logger' | 'bodies'
> & {
  /** Deliveries of one entry (a failed try each) before its page is recorded as failed. */
  maxDeliveries: number;
};

/**
 * What became of an entry: its page recorded (and the entry acknowledged with its lease), left
 * pending for a retry (another process stage, or this one, claims it after the idle time), or
 * dropped (unreadable; acknowledged).
 */
export type EntryOutcome = 'recorded' | 'retry' | 'dropped';

/**
 * The process stage for one page the fetch stage handed off: its body read back (from this
 * process's recent bodies, else the content store), then analysed, classified, stored,
 * discovered and recorded exactly as a page fetched here would be, and its lease acknowledged
 * with its entry once the record is written. Nothing here fetches: a failure leaves the entry
 * for a retry from the stored body, and after `maxDeliveries` tries the page is recorded as
 * failed with the reason. A fatal fault (the content disk full) is thrown.
 */
export async function processEntry(deps: ProcessDeps, entry: ProcessEntry): Promise<EntryOutcome> {
  const page = decodeHandedPage(entry.payload);
  if ('error' in page) {
    deps.counters.add('processInvalid');
    deps.logger.warn({ entry: entry.id, partition: entry.partition, problem: page.error }, 'unreadable process stream entry dropped');
    await deps.acks.ack(entry.partition, null, entry.id);
    return 'dropped';
  }
  return processPage(deps, page, { partition: entry.partition, leaseId: page.job.leaseId as string, entry: entry.id }, entry.deliveries, entry.urgent);
}

/**
 * One handed page, processed and recorded; its lease (and entry) acknowledged with the record.
 * Without a lease (`undefined`: a page whose hand-off came too late, see `handOffPage`) the page
 * is recorded and nothing is acknowledged. `urgent`: its host waits on its links (see
 * `PageRef`): they are discovered without waiting for a batch to fill.
 */
export async function processPage(deps: ProcessDeps, page: HandedPage, lease: LeaseRef | undefined, deliveries: number, urgent = false): Promise<EntryOutcome> {
  const ref: PageRef = { job: page.job, hash: fingerprint(page.job.url), urgent };
  try {
    let policy = await deps.policy.get();
    // As in the fetch stage: seeds may have widened the scope since this copy was read.
    if (policy && !inScope(policy.scope, page.job.url)) policy = await deps.policy.refresh();
    if (!policy) throw new TrawlError(ErrorCode.Store, 'no crawl policy is published yet', { action: 'retry' });
    const response: FetchResult = { ...page.response, body: await bodyOf(deps, page.body) };
    const status = classifyStatus(response.status, response.location !== null);
    const stored = page.body ? { storageKey: page.body.key, contentHash: page.body.contentHash, storedBytes: 0 } : null;
    const render = page.render
      ? { rendered: page.render.rendered, reason: page.render.reason, dom: page.render.dom ? await bodyOf(deps, page.render.dom) : null, domKey: page.render.dom?.key ?? null }
      : undefined;
    const discover = (candidates: Candidate[]) => deps.discovery.add(candidates, { recheck: deliveries > 1, urgent });
    // An urgent page's links go as soon as it is parsed (see `keepContent`).
    const outcome = await processFetched(deps, ref, policy, { response, status: status === 'retry' ? 'permanent' : status, stored, render }, urgent ? discover : undefined);
    if (outcome.discover && outcome.discover.length > 0) await discover(outcome.discover);
    if (outcome.record) await recordAndAck(deps, outcome.record, lease);
    deps.counters.add('processed');
    return 'recorded';
  } catch (error) {
    if (isTrawlError(error) && error.action === 'fatal') throw error;
    const giveUp = deliveries >= deps.maxDeliveries || (isTrawlError(error) && (error.action === 'fail' || error.action === 'skip'));
    if (!giveUp) {
      deps.counters.add('processRetries');
      deps.logger.warn({ err: error, url: page.job.url, deliveries }, 'processing failed: the page is processed again from its stored body');
      return 'retry';
    }
    deps.counters.add('dead');
    deps.logger.warn({ err: error, url: page.job.url, deliveries }, 'giving up on processing a page (recorded as failed)');
    const code = isTrawlError(error) ? error.code : ErrorCode.Store;
    const record = recordOf(ref, { state: 'failed', at: deps.clock.now(), errorCode: code, errorMessage: describeError(error) }, { ...page.response, body: Buffer.alloc(0) });
    await recordAndAck(deps, record, lease);
    return 'recorded';
  }
}

/** A handed page's body (or rendered DOM): kept in memory by this process's fetch stage, else read back from the store. */
async function bodyOf(deps: Pick<ProcessDeps, 'bodies' | 'store'>, ref: StoredRef | null): Promise<Buffer> {
  if (!ref) return Buffer.alloc(0);
  const kept = deps.bodies?.take(ref.key);
  if (kept) return kept;
  const body = await deps.store.get(ref.key);
  if (body === null) throw new TrawlError(ErrorCode.Store, `the stored body ${ref.key} is missing`, { action: 'fail' });
  return body;
}

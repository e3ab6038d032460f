import { ErrorCode } from '@trawl/core';
import type { GateTicket, HostHealthState } from '@trawl/frontier';
import type { Candidate } from '@trawl/model';
import type { JobResult } from '@trawl/queue';
import type { PipelineDeps } from './deps.js';
import type { FetchRecord } from './record.js';
import type { LeaseRef } from './records.js';

/** When the host this job holds may be fetched again, and what the politeness model learnt. */
export interface HostRelease {
  dueAt: number;
  health?: HostHealthState;
  /** Keep holding the host for this lease: its job runs again at `dueAt` (after fetching robots.txt). */
  keepHost?: boolean;
  /**
   * This attempt fetched the page and goes on to record it: no other attempt of the lease (the
   * job handed over because its lock lapsed) may fetch it again meanwhile.
   */
  fetched?: boolean;
  /**
   * The job never fetched (robots.txt already forbids its URL): hand back the claim on the host
   * that dispatch gave its lease, leaving the due time alone.
   */
  claimOnly?: boolean;
}

/**
 * The one decision every exit path of a fetch job produces. `applyOutcome` carries it out in the
 * only order that is safe:
 *   1. release the host (exactly once, and only by the job that holds it) — so the next URL of
 *      the host is not held up by this job's storing and parsing;
 *   2. keep the lease alive while a retry waits in the queue;
 *   3. discover the URLs found, then write the record — in that order, so a page recorded is a
 *      page whose links are in the frontier: a job that finds its URL recorded already (its
 *      earlier attempt died before the ack) can skip the fetch without losing those links;
 *   4. acknowledge the lease — only once the record is written, so a crash in between repeats
 *      the work instead of losing the URL (a record's ack rides on its record's batch:
 *      `Records.add` writes the batch, then acknowledges its leases).
 */
export interface JobOutcome {
  release?: HostRelease;
  /** Extend the lease to this time (a retry waits in the queue until then). */
  leaseUntil?: number;
  record?: FetchRecord;
  discover?: Candidate[];
  /** The URL is finished: acknowledge its lease after the record is written. */
  ack: boolean;
  /** What the queue does with the job. */
  result: JobResult;
}

/**
 * The host a job holds, released at most once. The ticket says which lease and attempt hold it;
 * `held` is false until the gate says OK (a job that never got the host must not release it,
 * except to hand back a claim it got without fetching — see `HostRelease.claimOnly`).
 */
export class HostHold {
  private held = false;
  private released = false;
  /** The release said this attempt fetched the page and goes on to record it. */
  fetched = false;

  constructor(
    private readonly deps: Pick<PipelineDeps, 'frontier' | 'clock' | 'leaseMs' | 'renewEveryMs'>,
    readonly ticket: GateTicket,
  ) {}

  /** Until when this attempt counts as alive after a heartbeat now (three renewals' worth). */
  aliveUntil(): number {
    return this.deps.clock.now() + 3 * renewEveryMs(this.deps);
  }

  /** The gate gave this job the host. */
  acquired(): void {
    this.held = true;
  }

  get holding(): boolean {
    return this.held && !this.released;
  }

  /**
   * The host is passed on, still held, to a stage that takes it over with this ticket's token (a
   * render stage): this job releases nothing from now on.
   */
  passOn(): void {
    this.released = true;
  }

  /** Frees the host (or keeps it for this lease) with its next due time. Idempotent. */
  async release(release: HostRelease, leaseUntil?: number): Promise<boolean> {
    if (release.claimOnly && !this.held && !this.released) {
      this.released = true;
      await this.deps.frontier.release(this.ticket, 0, { leaseUntil });
      return true;
    }
    if (!this.holding) return false;
    this.released = true;
    this.fetched = release.fetched === true;
    await this.deps.frontier.release(this.ticket, release.dueAt, {
      health: release.health,
      keepHost: release.keepHost,
      leaseUntil,
      fetchedAliveUntil: this.fetched ? this.aliveUntil() : undefined,
    });
    return true;
  }
}

/** How often a working job renews its lease: a third of the lease, and at least twice per BullMQ lock. */
export function renewEveryMs(deps: Pick<PipelineDeps, 'leaseMs' | 'renewEveryMs'>): number {
  return Math.max(50, deps.renewEveryMs ?? Math.floor(deps.leaseMs / 3));
}

/** Carries out an outcome (see `JobOutcome` for the order) and returns the queue's action. */
export async function applyOutcome(deps: PipelineDeps, hold: HostHold, outcome: JobOutcome): Promise<JobResult> {
  const { ticket } = hold;
  let leaseExtended = false;
  if (outcome.release) leaseExtended = await hold.release(outcome.release, outcome.leaseUntil);
  if (outcome.leaseUntil !== undefined && !leaseExtended) await deps.frontier.extendLease(ticket.partition, ticket.leaseId, outcome.leaseUntil);
  if (outcome.discover && outcome.discover.length > 0) await deps.discovery.add(outcome.discover);
  const lease = { partition: ticket.partition, leaseId: ticket.leaseId };
  if (outcome.record) {
    const refused = await recordAndAck(deps, outcome.record, outcome.ack ? lease : undefined);
    if (refused !== null) return { outcome: 'dead', reason: refused };
  } else if (outcome.ack) await deps.acks.ack(ticket.partition, ticket.leaseId);
  return outcome.result;
}

/**
 * Writes a record, then acknowledges its lease (and the page's process stream entry), in one
 * step (`Records.add`). Returns null, or the reason PostgreSQL refused the record: the URL is
 * then settled as failed with that reason (never fetched again and again) and its lease
 * acknowledged all the same.
 */
export async function recordAndAck(deps: Pick<PipelineDeps, 'records' | 'acks' | 'logger'>, record: FetchRecord, lease: LeaseRef | undefined): Promise<string | null> {
  const refused = await deps.records.add(record, lease);
  if (refused === null) return null;
  const failed = await deps.records.add(refusedRecord(record, refused), lease);
  if (failed && lease) {
    deps.logger.error({ url: record.url, reason: failed }, 'could not record a refused page even without its text');
    await deps.acks.ack(lease.partition, lease.leaseId, lease.entry);
  }
  return refused;
}

/** The least a refused record can say: the URL failed, and why (no page text that could be at fault). */
function refusedRecord(record: FetchRecord, reason: string): FetchRecord {
  return {
    ...record,
    state: 'failed',
    contentType: null,
    redirectTo: null,
    canonicalUrl: null,
    linksFound: null,
    errorCode: ErrorCode.Database,
    errorMessage: reason.slice(0, 1000),
    etag: null,
    lastModified: null,
    charset: null,
    dedup: undefined,
    text: undefined,
  };
}

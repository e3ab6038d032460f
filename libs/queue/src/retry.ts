import { randomUUID } from 'node:crypto';
import type { FinishedStatus, Job } from 'bullmq';
import { fetchQueueName } from './job.js';

/** A lease id no frontier ever handed out: a retried fetch job is adopted under it at the gate. */
export const freshLeaseId = (): string => `r-${randomUUID()}`;

/** Is this BullMQ queue name one of the fetch queues (`fetch-p<n>`)? */
export const isFetchQueueName = (name: string): boolean => /^fetch-p\d+$/.test(name) && fetchQueueName(Number(name.slice(7))) === name;

/**
 * Runs a finished fetch job again (from the failed set — the dead-letter queue — or the completed
 * set) with fresh attempts and a fresh, explicit lease id in its data (`l`). The old lease may be
 * tombstoned (it expired while the job waited, and its URL went back to the frontier), and the
 * gate drops a job carrying a tombstoned lease as stale; under a new id the gate adopts the job
 * as a lease of its own, so the retry is fetched — through the host gate, like any job.
 * Jobs of other queues are retried unchanged. Used by `trawl dlq retry` and the dashboard.
 */
export async function freshLeaseRetry(job: Job, state: FinishedStatus = 'failed'): Promise<void> {
  if (isFetchQueueName(job.queueName)) {
    // Fresh tries too: the count and the reason a job from the ready list carried in its data go.
    const { a: _tries, e: _reason, ...data } = (typeof job.data === 'object' && job.data !== null ? job.data : {}) as Record<string, unknown>;
    await job.updateData({ ...data, l: freshLeaseId() });
  }
  await job.retry(state, { resetAttemptsMade: true, resetAttemptsStarted: true });
}

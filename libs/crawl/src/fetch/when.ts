import type { PipelineDeps } from '../deps.js';
import type { JobOutcome } from '../outcome.js';

/**
 * When to ask the queue to run a deferred job again: a little before the host's due time, since
 * delayed jobs come back up to ~100 ms late; one that comes back early waits at the gate.
 */
export function earlyForQueue(deps: Pick<PipelineDeps, 'clock' | 'gateWaitMs'>, dueAt: number): number {
  return Math.max(deps.clock.now(), dueAt - deps.gateWaitMs / 2);
}

/** Not this job's turn yet: run again at `until` (not an attempt). */
export const defer = (until: number): JobOutcome => ({ ack: false, result: { outcome: 'defer', until } });

import { sleep } from '@trawl/core';
import type { Attempt } from '../attempt.js';
import type { PipelineDeps } from '../deps.js';
import type { HostHold } from '../outcome.js';

export type Gate = Awaited<ReturnType<PipelineDeps['frontier']['acquire']>>;

/**
 * How long before a host's due time the gate is asked for it, as of that time: about a round trip
 * to Redis on a busy event loop, which then overlaps the last moments of the wait instead of
 * following it. The request itself still never starts before the due time (`acquireAt`).
 */
export const GATE_ASK_AHEAD_MS = 4;

/**
 * The host gate. A job handed out ahead of its host's due time (the dispatcher's lead) waits here
 * rather than in the queue's delayed set, whose timers run up to ~100 ms late; the gate is asked
 * again and alone decides.
 */
export async function passGate(deps: Pick<PipelineDeps, 'frontier' | 'clock' | 'gateWaitMs'>, attempt: Attempt, hold: HostHold): Promise<Gate> {
  const { clock } = deps;
  const untilDue = (at: number) => at - clock.now();
  const due = attempt.job.hostDueAt;
  if (due !== null && untilDue(due) > GATE_ASK_AHEAD_MS && untilDue(due) <= deps.gateWaitMs) await sleep(untilDue(due) - GATE_ASK_AHEAD_MS);
  let gate = await acquireAt(deps, hold, due);
  for (let tries = 0; gate.kind === 'not-due' && untilDue(gate.at) <= deps.gateWaitMs && tries < 3; tries += 1) {
    await sleep(Math.max(0, untilDue(gate.at) - GATE_ASK_AHEAD_MS));
    gate = await acquireAt(deps, hold, gate.at);
  }
  return gate;
}

/**
 * Asks the gate for the host as of `due` when that is at most GATE_ASK_AHEAD_MS away (else as of
 * now), and once it says yes waits out whatever is left: the fetch starts at the due time, not a
 * round trip after it, and never before it. The clock counts whole milliseconds (a response that
 * ended at 1000.9 was stamped 1000, its host due at 1000 + delay), so the wait lasts until the
 * due millisecond has passed: the request then starts at least the delay after the response's
 * real end, as it did when the gate's round trip came after the wait.
 */
async function acquireAt(deps: Pick<PipelineDeps, 'frontier' | 'clock'>, hold: HostHold, due: number | null): Promise<Gate> {
  const { clock } = deps;
  const ahead = due !== null && due > clock.now() && due - clock.now() <= GATE_ASK_AHEAD_MS;
  const gate = await deps.frontier.acquire(hold.ticket, ahead ? { at: due } : {});
  if (ahead && gate.kind === 'ok') while (clock.now() <= due) await sleep(due + 1 - clock.now());
  return gate;
}

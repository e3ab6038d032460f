import { sleep } from '@trawl/core';
import type { FetchResult } from '@trawl/fetch';
import type { Frontier } from '@trawl/frontier';
import type { ResolvedPolicy } from '@trawl/model';
import { hostDelayMs, responseTimeMs } from '@trawl/politeness';
import { RequestRefused, type SubrequestInfo, type SubrequestRecord } from '@trawl/render';
import { decide, needsFetch, originOf } from '@trawl/robots';
import { hostOf } from '@trawl/url';
import type { PipelineDeps } from '../deps.js';

/**
 * How far ahead another host's due time may be for a borrow to be granted (the request then waits
 * that long, holding the other host's token): past it, the request is refused at once.
 */
export const BORROW_WITHIN_MS = 250;

/** Every refusal of another host's request starts so (see `otherHostRefusals`). */
const REFUSAL = 'other-host';

export type OtherHostDeps = Pick<PipelineDeps, 'fetcher' | 'robots' | 'clock' | 'counters' | 'logger' | 'addresses'> & {
  frontier: Pick<Frontier, 'borrowHost' | 'returnHost'>;
};

/**
 * The browser's requests to hosts other than the page's (see docs/architecture.md, "Rendering"):
 * each one borrows its host's gate for itself (`Frontier.borrowHost`: one try, granted only with
 * no token of the host out and the host due within `BORROW_WITHIN_MS`), is fetched through the
 * fetcher (its SSRF guard, timeouts, body cap) and returns the host due its delay after the
 * response ended. Never waits for a host that is not free: refused at once (`RequestRefused`,
 * the page's request is recorded `blocked` with why). robots.txt is read from the cache only: a
 * missing or stale copy refuses the request, since fetching it would take another host's turn.
 * The host's address group is asked once too (a probe: refused, nothing is reserved). The host's
 * Crawl-delay and back-off make its delay; its URL budget and queue are not touched.
 */
export function otherHostFetch(deps: OtherHostDeps, policy: ResolvedPolicy, holdMs: () => number): (url: string, request: SubrequestInfo) => Promise<FetchResult> {
  const refuse = (host: string, why: string): never => {
    deps.counters.add('renderBorrowRefused');
    throw new RequestRefused(`${REFUSAL} ${host}: ${why}`);
  };
  return async (url, request) => {
    const host = hostOf(url);
    const robots = await robotsVerdict(deps, policy, url);
    if (robots.refusal !== null) return refuse(host, robots.refusal);
    const borrow = await deps.frontier.borrowHost(host, { holdMs: holdMs() + BORROW_WITHIN_MS, withinMs: BORROW_WITHIN_MS });
    if (borrow.kind === 'busy') return refuse(host, 'busy');
    if (borrow.kind === 'not-due') return refuse(host, `not due for ${Math.max(0, borrow.at - deps.clock.now())} ms`);
    if (borrow.kind === 'paused') return refuse(host, 'paused');
    // The other host's address group (TRAWL_POLITENESS_KEY, the per-address cap): one try too.
    const addressTurn = deps.addresses
      ? await deps.addresses.enter({ host, hostname: new URL(url).hostname, holder: borrow.token }, { ...policy.policy.politeness, minDelayMs: policy.politeness.minDelayMs }, { probe: true })
      : null;
    if (addressTurn?.kind === 'wait') {
      // Nothing was sent: the host is returned as it was (a return never moves its due time back).
      await deps.frontier.returnHost(host, borrow.token, 0).catch((error: unknown) => deps.logger.warn({ err: error, host }, 'could not return a borrowed host: its token lapses'));
      return refuse(host, 'address group busy');
    }
    deps.counters.add('renderBorrowed');
    const delayAfter = (lastResponseMs: number | null) => hostDelayMs({ crawlDelayMs: robots.crawlDelayMs, health: borrow.health, lastResponseMs }, policy.politeness);
    let nextDueAt = deps.clock.now() + delayAfter(null);
    try {
      // The clock counts whole milliseconds: wait until the due one has passed (as the gate does).
      while (deps.clock.now() <= borrow.dueAt) await sleep(borrow.dueAt + 1 - deps.clock.now());
      request.signal.throwIfAborted();
      const accept = request.headers.accept;
      const response = await deps.fetcher.fetch(url, { signal: request.signal, ...(accept ? { headers: { accept } } : {}) });
      nextDueAt = response.endedAt + delayAfter(responseTimeMs(response));
      return response;
    } catch (error) {
      nextDueAt = deps.clock.now() + delayAfter(null);
      throw error;
    } finally {
      if (addressTurn?.kind === 'go') addressTurn.leave(nextDueAt);
      await deps.frontier.returnHost(host, borrow.token, nextDueAt).catch((error: unknown) => deps.logger.warn({ err: error, host }, 'could not return a borrowed host: its token lapses'));
    }
  };
}

/** The cached robots.txt's say over another host's URL: why not (missing, stale, disallowed), and its Crawl-delay. */
async function robotsVerdict(deps: Pick<PipelineDeps, 'robots' | 'clock'>, policy: ResolvedPolicy, url: string): Promise<{ refusal: string | null; crawlDelayMs: number | null }> {
  if (!policy.policy.robots.obey) return { refusal: null, crawlDelayMs: null };
  const entry = await deps.robots.get(originOf(url));
  const now = deps.clock.now();
  if (entry === null) return { refusal: 'robots.txt not cached', crawlDelayMs: null };
  if (needsFetch(entry, now)) return { refusal: 'robots.txt stale', crawlDelayMs: null };
  const decision = decide(entry, url, now, policy.robots);
  if (decision.verdict === 'allow') return { refusal: null, crawlDelayMs: decision.crawlDelayMs };
  return { refusal: `robots: ${decision.reason}`, crawlDelayMs: null };
}

/**
 * The refused requests to other hosts, for the page's render reason: `b.example:8080 busy,
 * cdn.example robots.txt not cached` (each host and why once, the first few), or '' when none.
 */
export function otherHostRefusals(requests: readonly SubrequestRecord[], most = 3): string {
  const seen = new Set<string>();
  for (const request of requests) {
    if (request.outcome !== 'blocked' || !request.reason?.startsWith(`${REFUSAL} `)) continue;
    seen.add(request.reason.slice(REFUSAL.length + 1).replace(': ', ' '));
  }
  if (seen.size === 0) return '';
  const listed = [...seen].slice(0, most);
  return `other hosts refused: ${listed.join(', ')}${seen.size > most ? `, +${seen.size - most}` : ''}`;
}

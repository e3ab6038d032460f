import { sleep } from '@trawl/core';
import type { FetchResult } from '@trawl/fetch';
import type { Frontier } from '@trawl/frontier';
import type { ResolvedPolicy } from '@trawl/model';
import { hostDelayMs, responseTimeMs } from '@trawl/politeness';
import { RequestRefused, type SubrequestInfo, type SubrequestRecord } from '@trawl/render';
import { decide, needsFetch, originOf } from '@trawl/robots';
import { hostOf } from '@trawl/url';
import type { PipelineDeps } from '../deps.js';
import { robotsStep } from './robots-step.js';

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
 * the page's request is recorded `blocked` with why). robots.txt comes first, as for any host: with
 * no fresh copy cached, the borrowed turn fetches the host's robots.txt (and caches it for every
 * worker) and the request itself is refused this time; a later page's request finds it (a CDN
 * that no page of the crawl links to is otherwise never asked for its robots.txt).
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
    if (robots.refusal !== null && !robots.fetch) return refuse(host, robots.refusal);
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
    if (robots.fetch) return fetchRobotsInTurn(deps, policy, url, request, borrow, addressTurn, refuse);
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

type Borrowed = Extract<Awaited<ReturnType<Frontier['borrowHost']>>, { kind: 'granted' }>;
type AddressTurn = Awaited<ReturnType<NonNullable<PipelineDeps['addresses']>['enter']>> | null;

/**
 * The borrowed turn's one request is the other host's robots.txt, fetched and cached as the fetch
 * stage does for a page's host (a failure is cached too, as it would be there); the host is
 * returned due its delay after. The subresource itself is refused this time.
 */
async function fetchRobotsInTurn(
  deps: OtherHostDeps,
  policy: ResolvedPolicy,
  url: string,
  request: SubrequestInfo,
  borrow: Borrowed,
  addressTurn: AddressTurn,
  refuse: (host: string, why: string) => never,
): Promise<never> {
  const host = hostOf(url);
  const delayAfter = (crawlDelayMs: number | null, lastResponseMs: number | null) => hostDelayMs({ crawlDelayMs, health: borrow.health, lastResponseMs }, policy.politeness);
  let nextDueAt = deps.clock.now() + delayAfter(null, null);
  let outcome = 'robots.txt fetched in its turn';
  try {
    while (deps.clock.now() <= borrow.dueAt) await sleep(borrow.dueAt + 1 - deps.clock.now());
    const step = await robotsStep(
      { fetcher: deps.fetcher, cache: deps.robots, counters: deps.counters, now: () => deps.clock.now(), logger: deps.logger },
      policy,
      url,
      delayAfter(null, null),
      request.signal,
    );
    if (step.kind === 'fetched') {
      nextDueAt = deps.clock.now() + delayAfter(step.crawlDelayMs, step.responseMs);
      if (step.failed) outcome = `robots.txt unavailable: ${step.reason}`;
    } else outcome = 'robots.txt cached meanwhile';
  } catch (error) {
    outcome = `robots.txt could not be fetched: ${error instanceof Error ? error.message : String(error)}`;
  } finally {
    if (addressTurn?.kind === 'go') addressTurn.leave(nextDueAt);
    await deps.frontier.returnHost(host, borrow.token, nextDueAt).catch((error: unknown) => deps.logger.warn({ err: error, host }, 'could not return a borrowed host: its token lapses'));
  }
  return refuse(host, outcome);
}

/**
 * The cached robots.txt's say over another host's URL: why not (disallowed), its Crawl-delay, or
 * that no fresh copy is cached (`fetch`: the borrowed turn fetches it).
 */
async function robotsVerdict(deps: Pick<PipelineDeps, 'robots' | 'clock'>, policy: ResolvedPolicy, url: string): Promise<{ refusal: string | null; crawlDelayMs: number | null; fetch: boolean }> {
  if (!policy.policy.robots.obey) return { refusal: null, crawlDelayMs: null, fetch: false };
  const entry = await deps.robots.get(originOf(url));
  const now = deps.clock.now();
  if (entry === null) return { refusal: 'robots.txt not cached', crawlDelayMs: null, fetch: true };
  if (needsFetch(entry, now)) return { refusal: 'robots.txt stale', crawlDelayMs: null, fetch: true };
  const decision = decide(entry, url, now, policy.robots);
  if (decision.verdict === 'allow') return { refusal: null, crawlDelayMs: decision.crawlDelayMs, fetch: false };
  return { refusal: `robots: ${decision.reason}`, crawlDelayMs: null, fetch: false };
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

import { type Clock, systemClock } from '@trawl/core';
import type { RenderClassification } from './classify.js';

/**
 * Per host, whether rendering pays. The classifier sees one page; a host whose pages look plain
 * may still add links with scripts (a menu, "related" lists built from JSON). So up to
 * `sampleSize` pages of a host with scripts are rendered, each compared with its plain HTML, and
 * the host keeps being rendered only if the browser found materially more in enough of them.
 *
 * A render costs tens of times what an HTTP page does, and most sites' scripts (analytics, a menu
 * toggle) add nothing, so samples are spent where they may change the answer:
 * - one sample of a host at a time;
 * - the host's first page with scripts is a sample, and so is the page after a sample that gained
 *   (a host that looks built by scripts is confirmed at once, its pages not left unrendered);
 * - after a sample that found nothing, the next waits `sampleSpacing` more of the host's pages;
 * - the verdict falls as soon as the samples left could not change it (two that found nothing of
 *   three, with half needed, settle a host as plain).
 * On a site whose scripts add nothing, that is one render in the first `sampleSpacing` + 1 pages
 * and two in all, not `sampleSize` renders of its first pages.
 *
 * The verdict is reviewed after `reviewAfterMs` (sites change their front ends). The tally and the
 * verdict live in a `HostVerdictStore`: one process's memory, or Redis (shared by every worker of
 * the crawl and kept across restarts, so a host is sampled once per review, not once per process).
 */
export interface RenderLearnerSettings {
  /** Pages of a host rendered to learn from, at most (0: never sample; only the classifier decides). */
  sampleSize: number;
  /** After a sample that found nothing, this many more of the host's pages pass before the next. */
  sampleSpacing: number;
  /** A sample gains when the browser finds at least this many links the HTML did not have… */
  minExtraLinks: number;
  /** …that are at least this share of the HTML's link count… */
  minLinkGain: number;
  /** …or at least this many more characters of text. */
  minExtraTextChars: number;
  /** The host renders when at least this share of its samples gained. */
  minGainShare: number;
  /** How long a verdict stands before the host is sampled again. */
  reviewAfterMs: number;
  /** Hosts remembered (least recently decided forgotten first). */
  maxHosts: number;
  /**
   * How long a sample handed out stands without being observed or abandoned (its worker died
   * mid-render): then its slot is free again. Longer than any render may hold its host.
   */
  claimTtlMs: number;
}

export const DEFAULT_LEARNER_SETTINGS: Readonly<RenderLearnerSettings> = Object.freeze({
  sampleSize: 3,
  sampleSpacing: 10,
  minExtraLinks: 3,
  minLinkGain: 0.2,
  minExtraTextChars: 500,
  minGainShare: 0.5,
  reviewAfterMs: 6 * 3600_000,
  maxHosts: 100_000,
  claimTtlMs: 120_000,
});

/** What one version of a page (plain or rendered) offered: its links (absolute, normalized by the caller) and text size. */
export interface PageYield {
  links: Iterable<string>;
  textChars: number;
}

export interface Comparison {
  extraLinks: number;
  plainLinks: number;
  extraTextChars: number;
  gained: boolean;
}

export type HostVerdict = 'sampling' | 'render' | 'plain';

export interface HostRenderState {
  verdict: HostVerdict;
  samples: number;
  /** Samples handed out by `decide` and not yet observed (or abandoned). */
  pending: number;
  gains: number;
  decidedAt: number | null;
  /** When the last sample was handed out (pending samples lapse `claimTtlMs` after it). */
  claimedAt: number | null;
  /** The host's pages that asked since the last sample was handed out. */
  passed: number;
  /** Whether the last sample counted gained (the next page is then a sample at once). */
  lastGained: boolean;
}

export interface LearnerDecision {
  render: boolean;
  reason: string;
  /** The result should be reported back with `observe` (the page is one of the host's samples). */
  sample: boolean;
}

/** What a host's tally follows, wherever it is kept. */
export type SampleRules = Pick<RenderLearnerSettings, 'sampleSize' | 'sampleSpacing' | 'minGainShare' | 'reviewAfterMs' | 'claimTtlMs'>;

/**
 * Where hosts' tallies and verdicts live. Each call is one atomic step (in Redis, one script), so
 * learners in many processes never hand out more than `sampleSize` samples of a host between them.
 */
export interface HostVerdictStore {
  /** The host's standing state (a verdict older than `reviewAfterMs` is none). */
  read(host: string, rules: SampleRules, now: number): Promise<HostRenderState>;
  /** Hands out one of the host's samples if it is still sampling and one is due (else counts the page as passed). */
  claim(host: string, rules: SampleRules, now: number): Promise<{ state: HostRenderState; granted: boolean }>;
  /** A sample's outcome; the verdict falls once the samples left could not change it. */
  record(host: string, gained: boolean, rules: SampleRules, now: number): Promise<HostRenderState>;
  /** A sample handed out that will not be observed: its slot is free again. */
  release(host: string, rules: SampleRules, now: number): Promise<HostRenderState>;
}

/** Pure: did the browser find materially more on this page? */
export function compareYields(plain: PageYield, rendered: PageYield, settings: RenderLearnerSettings = DEFAULT_LEARNER_SETTINGS): Comparison {
  const plainLinks = new Set(plain.links);
  let extraLinks = 0;
  for (const link of new Set(rendered.links)) if (!plainLinks.has(link)) extraLinks++;
  const extraTextChars = Math.max(0, rendered.textChars - plain.textChars);
  const linkGain = extraLinks >= settings.minExtraLinks && extraLinks >= settings.minLinkGain * plainLinks.size;
  return { extraLinks, plainLinks: plainLinks.size, extraTextChars, gained: linkGain || extraTextChars >= settings.minExtraTextChars };
}

export const freshHostState = (): HostRenderState => ({ verdict: 'sampling', samples: 0, pending: 0, gains: 0, decidedAt: null, claimedAt: null, passed: 0, lastGained: false });

/**
 * Pure: a host's state as it stands at `now`: a verdict due for review is none (sample again),
 * and samples handed out more than `claimTtlMs` after the last claim have lapsed. The store's Lua
 * scripts (`@trawl/model`, `lua/includes/hostTally.lua`) follow the same rules.
 */
export function standingState(state: HostRenderState, rules: SampleRules, now: number): HostRenderState {
  if (state.verdict !== 'sampling' && state.decidedAt !== null && now - state.decidedAt >= rules.reviewAfterMs) return freshHostState();
  if (state.pending > 0 && state.claimedAt !== null && now - state.claimedAt >= rules.claimTtlMs) return { ...state, pending: 0 };
  return state;
}

/**
 * Pure: a page of a sampling host asks. It is a sample if none is in flight and one is due (the
 * host's first, the one after a sample that gained, or `sampleSpacing` pages after one that did
 * not); otherwise it counts as passed.
 */
export function claimSample(state: HostRenderState, rules: SampleRules, now: number): { state: HostRenderState; granted: boolean } {
  const standing = standingState(state, rules, now);
  if (standing.verdict !== 'sampling' || standing.samples + standing.pending >= rules.sampleSize) return { state: standing, granted: false };
  const due = standing.pending === 0 && (standing.samples === 0 || standing.lastGained || standing.passed >= rules.sampleSpacing);
  if (!due) return { state: { ...standing, passed: standing.passed + 1 }, granted: false };
  return { state: { ...standing, pending: standing.pending + 1, passed: 0, claimedAt: now }, granted: true };
}

/**
 * Pure: a sample's outcome counted. The host renders once at least `minGainShare` of
 * `sampleSize` samples gained, and is plain once too few could still gain; until then it samples
 * on. A host with a verdict counts nothing.
 */
export function recordSample(state: HostRenderState, gained: boolean, rules: SampleRules, now: number): HostRenderState {
  const standing = standingState(state, rules, now);
  if (standing.verdict !== 'sampling') return standing;
  const next = { ...standing, pending: Math.max(0, standing.pending - 1), samples: standing.samples + 1, gains: standing.gains + (gained ? 1 : 0), lastGained: gained };
  const needed = rules.minGainShare * rules.sampleSize;
  if (next.gains >= needed) return { ...next, verdict: 'render', decidedAt: now };
  if (next.gains + Math.max(0, rules.sampleSize - next.samples) < needed) return { ...next, verdict: 'plain', decidedAt: now };
  return next;
}

/** Pure: a sample handed out and abandoned. */
export function releaseSample(state: HostRenderState, rules: SampleRules, now: number): HostRenderState {
  const standing = standingState(state, rules, now);
  return { ...standing, pending: Math.max(0, standing.pending - 1) };
}

/** One process's tallies (the default): at most `maxHosts`, the least recently used forgotten first. */
export class MemoryHostVerdicts implements HostVerdictStore {
  private readonly hosts = new Map<string, HostRenderState>();

  constructor(private readonly maxHosts: number = DEFAULT_LEARNER_SETTINGS.maxHosts) {}

  async read(host: string, rules: SampleRules, now: number): Promise<HostRenderState> {
    return this.put(host, standingState(this.hosts.get(host) ?? freshHostState(), rules, now));
  }

  async claim(host: string, rules: SampleRules, now: number): Promise<{ state: HostRenderState; granted: boolean }> {
    const claimed = claimSample(this.hosts.get(host) ?? freshHostState(), rules, now);
    return { state: this.put(host, claimed.state), granted: claimed.granted };
  }

  async record(host: string, gained: boolean, rules: SampleRules, now: number): Promise<HostRenderState> {
    return this.put(host, recordSample(this.hosts.get(host) ?? freshHostState(), gained, rules, now));
  }

  async release(host: string, rules: SampleRules, now: number): Promise<HostRenderState> {
    return this.put(host, releaseSample(this.hosts.get(host) ?? freshHostState(), rules, now));
  }

  private put(host: string, state: HostRenderState): HostRenderState {
    // Re-inserted: the map's order is least recently used first.
    this.hosts.delete(host);
    if (this.hosts.size >= this.maxHosts) {
      const oldest = this.hosts.keys().next().value;
      if (oldest !== undefined) this.hosts.delete(oldest);
    }
    this.hosts.set(host, state);
    return { ...state };
  }
}

/**
 * The learner a fetch stage asks. It keeps what it last heard of each host: a host with a
 * verdict is answered from memory until the verdict is due for review (no round trip to the
 * store per page), and a host whose samples are all handed out (to this process or another) is
 * asked again after `cacheMs`. Only pages that may become samples cost a call to the store.
 */
export class RenderLearner {
  private readonly known = new Map<string, { state: HostRenderState; at: number }>();
  private readonly rules: SampleRules;

  constructor(
    readonly settings: RenderLearnerSettings = DEFAULT_LEARNER_SETTINGS,
    private readonly clock: Clock = systemClock,
    private readonly store: HostVerdictStore = new MemoryHostVerdicts(settings.maxHosts),
    private readonly cacheMs = 2000,
  ) {
    this.rules = { sampleSize: settings.sampleSize, sampleSpacing: settings.sampleSpacing, minGainShare: settings.minGainShare, reviewAfterMs: settings.reviewAfterMs, claimTtlMs: settings.claimTtlMs };
  }

  /**
   * Render this page? The classifier's "yes" always stands; a page without scripts is never
   * rendered; otherwise the host's verdict, sampling while it has none (see the class comment).
   * Samples in flight count, so many workers starting on one host render one sample at a time
   * between them, not one each.
   */
  async decide(host: string, page: RenderClassification): Promise<LearnerDecision> {
    // Nothing on the page would run in the browser: no sample can learn anything from it.
    if (page.reason === 'no-scripts' || page.reason === 'inert-scripts') return { render: false, reason: page.reason, sample: false };
    if (this.settings.sampleSize === 0) return { render: page.render, reason: page.reason, sample: false };
    const now = this.clock.now();
    const settled = this.settled(host, now);
    if (settled !== null) return decisionOf(settled, page, false);
    const { state, granted } = await this.store.claim(host, this.rules, now);
    this.remember(host, state, now);
    if (granted && !page.render) return { render: true, reason: `sampling ${state.samples + state.pending}/${this.settings.sampleSize}`, sample: true };
    return decisionOf(state, page, granted);
  }

  /** A sample's plain and rendered yields. Returns the comparison; the verdict falls once the samples left could not change it. */
  async observe(host: string, plain: PageYield, rendered: PageYield): Promise<Comparison> {
    const comparison = compareYields(plain, rendered, this.settings);
    const now = this.clock.now();
    this.remember(host, await this.store.record(host, comparison.gained, this.rules, now), now);
    return comparison;
  }

  /** A sample `decide` handed out that will not be observed (its render failed): another page takes its place. */
  async abandon(host: string): Promise<void> {
    const now = this.clock.now();
    this.remember(host, await this.store.release(host, this.rules, now), now);
  }

  /** The host's state as the store has it now. */
  async state(host: string): Promise<HostRenderState> {
    return this.store.read(host, this.rules, this.clock.now());
  }

  /** What this process may answer without the store: a standing verdict, or no sample slot free as of `cacheMs` ago. */
  private settled(host: string, now: number): HostRenderState | null {
    const hit = this.known.get(host);
    if (hit === undefined) return null;
    const { state } = hit;
    if (state.verdict !== 'sampling') return state.decidedAt !== null && now - state.decidedAt < this.rules.reviewAfterMs ? state : null;
    const full = state.samples + state.pending >= this.rules.sampleSize;
    return full && now - hit.at < this.cacheMs ? state : null;
  }

  private remember(host: string, state: HostRenderState, now: number): void {
    this.known.delete(host);
    if (this.known.size >= this.settings.maxHosts) {
      const oldest = this.known.keys().next().value;
      if (oldest !== undefined) this.known.delete(oldest);
    }
    this.known.set(host, { state, at: now });
  }
}

/** The decision for a page of a host not handing it a sample: the classifier's yes, else the verdict. */
function decisionOf(state: HostRenderState, page: RenderClassification, sample: boolean): LearnerDecision {
  if (page.render) return { render: true, reason: page.reason, sample };
  if (state.verdict === 'render') return { render: true, reason: `host renders (${state.gains}/${state.samples} samples gained)`, sample: false };
  return { render: false, reason: page.reason, sample: false };
}

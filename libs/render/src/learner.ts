import { type Clock, systemClock } from '@trawl/core';
import type { RenderClassification } from './classify.js';

/**
 * Per host, whether rendering pays. The classifier sees one page; a host whose pages look plain
 * may still add links with scripts (a menu, "related" lists built from JSON). So the first
 * `sampleSize` pages of a host with scripts are rendered, each compared with its plain HTML, and
 * the host keeps being rendered only if the browser found materially more in enough of them. The
 * verdict is reviewed after `reviewAfterMs` (sites change their front ends).
 */
export interface RenderLearnerSettings {
  /** Pages of a host rendered to learn from (0: never sample; only the classifier decides). */
  sampleSize: number;
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
}

export const DEFAULT_LEARNER_SETTINGS: Readonly<RenderLearnerSettings> = Object.freeze({
  sampleSize: 3,
  minExtraLinks: 3,
  minLinkGain: 0.2,
  minExtraTextChars: 500,
  minGainShare: 0.5,
  reviewAfterMs: 6 * 3600_000,
  maxHosts: 100_000,
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
}

export interface LearnerDecision {
  render: boolean;
  reason: string;
  /** The result should be reported back with `observe` (the page is one of the host's samples). */
  sample: boolean;
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

export class RenderLearner {
  private readonly hosts = new Map<string, HostRenderState>();

  constructor(
    readonly settings: RenderLearnerSettings = DEFAULT_LEARNER_SETTINGS,
    private readonly clock: Clock = systemClock,
  ) {}

  /**
   * Render this page? The classifier's "yes" always stands; a page without scripts is never
   * rendered; otherwise the host's verdict, sampling while it has none. Samples in flight count,
   * so many workers starting on one host render `sampleSize` pages, not one each.
   */
  decide(host: string, page: RenderClassification): LearnerDecision {
    const state = this.current(host);
    if (page.reason === 'no-scripts') return { render: false, reason: page.reason, sample: false };
    const sample = state.verdict === 'sampling' && state.samples + state.pending < this.settings.sampleSize;
    if (sample) state.pending++;
    if (page.render) return { render: true, reason: page.reason, sample };
    if (sample) return { render: true, reason: `sampling ${state.samples + state.pending}/${this.settings.sampleSize}`, sample };
    if (state.verdict === 'render') return { render: true, reason: `host renders (${state.gains}/${state.samples} samples gained)`, sample: false };
    return { render: false, reason: page.reason, sample: false };
  }

  /** A sample's plain and rendered yields. Returns the comparison; the verdict falls once `sampleSize` samples are in. */
  observe(host: string, plain: PageYield, rendered: PageYield): Comparison {
    const comparison = compareYields(plain, rendered, this.settings);
    const state = this.current(host);
    if (state.verdict !== 'sampling') return comparison;
    state.pending = Math.max(0, state.pending - 1);
    state.samples++;
    if (comparison.gained) state.gains++;
    if (state.samples >= this.settings.sampleSize) {
      state.verdict = state.gains >= this.settings.minGainShare * state.samples ? 'render' : 'plain';
      state.decidedAt = this.clock.now();
    }
    return comparison;
  }

  /** A sample `decide` handed out that will not be observed (its render failed): another page takes its place. */
  abandon(host: string): void {
    const state = this.current(host);
    state.pending = Math.max(0, state.pending - 1);
  }

  state(host: string): HostRenderState {
    return { ...this.current(host) };
  }

  private current(host: string): HostRenderState {
    let state = this.hosts.get(host);
    if (state !== undefined && state.decidedAt !== null && this.clock.now() - state.decidedAt >= this.settings.reviewAfterMs) state = undefined;
    if (state === undefined) {
      state = { verdict: 'sampling', samples: 0, pending: 0, gains: 0, decidedAt: null };
      if (this.hosts.size >= this.settings.maxHosts) {
        const oldest = this.hosts.keys().next().value;
        if (oldest !== undefined) this.hosts.delete(oldest);
      }
    }
    // Re-inserted: the map's order is least recently used first.
    this.hosts.delete(host);
    this.hosts.set(host, state);
    return state;
  }
}

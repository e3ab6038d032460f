/**
 * Polite capacity: how many pages a second politeness allows the crawl right now.
 *
 *   capacity = Σ over hosts with work (URLs queued, or one in flight), not paused, of 1 / d_h
 *
 * where d_h is the delay in force for host h (its Crawl-delay or the configured delay, or its
 * back-off when longer; see `explainDelay`). A host can be fetched at most once per d_h, so this
 * is the ceiling of the crawl's fetch rate however many workers it has. Reading every host would
 * cost a Redis round trip per host, so it is estimated from a uniform sample:
 *
 *   capacity ≈ hostsWithWork × mean over the sample of 1 / d_h
 *
 * Pure: the caller samples and measures.
 */
export interface CapacityEstimate {
  /** Pages per second politeness allows. */
  pagesPerSecond: number;
  hostsWithWork: number;
  sampled: number;
  /** Of the sample, the share backing off (back-off is the delay in force) — scaled to all hosts. */
  hostsBackingOff: number;
}

export function politeCapacity(sample: readonly { delayMs: number; backingOff: boolean }[], hostsWithWork: number): CapacityEstimate {
  const usable = sample.filter((s) => s.delayMs > 0 && Number.isFinite(s.delayMs));
  if (usable.length === 0 || hostsWithWork === 0) return { pagesPerSecond: 0, hostsWithWork, sampled: usable.length, hostsBackingOff: 0 };
  const meanRate = usable.reduce((sum, s) => sum + 1000 / s.delayMs, 0) / usable.length;
  const backingOff = usable.filter((s) => s.backingOff).length / usable.length;
  return {
    pagesPerSecond: hostsWithWork * meanRate,
    hostsWithWork,
    sampled: usable.length,
    hostsBackingOff: Math.round(hostsWithWork * backingOff),
  };
}

/**
 * The effective fetch rate: fetches (pages and robots.txt requests) per second over the last
 * `windowMs`, from samples of the crawl-wide fetch counter. Keeps only what the window needs.
 */
export class RateWindow {
  private samples: { at: number; count: number }[] = [];

  constructor(private readonly windowMs = 30_000) {}

  /** Records the counter's value at `at` and returns the rate over the window (null until two samples). */
  add(at: number, count: number): number | null {
    this.samples.push({ at, count });
    while (this.samples.length > 2 && (this.samples[1] as { at: number }).at <= at - this.windowMs) this.samples.shift();
    const first = this.samples[0] as { at: number; count: number };
    if (this.samples.length < 2 || at <= first.at) return null;
    // A counter that went down was reset (the namespace was wiped): start over.
    if (count < first.count) {
      this.samples = [{ at, count }];
      return null;
    }
    return ((count - first.count) * 1000) / (at - first.at);
  }
}

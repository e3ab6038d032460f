/** Durations every process measures (seconds), exported as Prometheus histograms. */
export const TIMINGS = {
  /**
   * How late a fetch started: its start minus its host's due time (0 when it started on time).
   * The politeness schedule's own error, which a busy event loop stretches.
   */
  fetchLateness: { metric: 'trawl_fetch_lateness_seconds', help: 'How late each fetch started: its start minus its host\'s due time.', buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30] },
} as const;
export type TimingName = keyof typeof TIMINGS;

export type TimingListener = (name: TimingName, seconds: number) => void;

/** Samples kept per timing for this process's own quantiles (a uniform reservoir). */
const RESERVOIR = 4096;

/**
 * This process's timings: each value goes to the listeners (the metrics' histograms) and into a
 * bounded uniform sample, from which a run's summary reads its quantiles.
 */
export class Timings {
  private listeners: TimingListener[] = [];
  private readonly samples = new Map<TimingName, { seen: number; kept: number[] }>();

  constructor(private readonly random: () => number = Math.random) {}

  record(name: TimingName, seconds: number): void {
    if (!Number.isFinite(seconds)) return;
    const value = Math.max(0, seconds);
    for (const listener of this.listeners) listener(name, value);
    let sample = this.samples.get(name);
    if (!sample) this.samples.set(name, (sample = { seen: 0, kept: [] }));
    sample.seen += 1;
    if (sample.kept.length < RESERVOIR) sample.kept.push(value);
    else {
      const at = Math.floor(this.random() * sample.seen);
      if (at < RESERVOIR) sample.kept[at] = value;
    }
  }

  /** Calls `listener` for every value from now on; returns the unsubscribe. */
  observe(listener: TimingListener): () => void {
    this.listeners.push(listener);
    return () => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    };
  }

  /** The q-quantiles (0..1) of this process's values so far, and how many there were; null when none. */
  quantiles(name: TimingName, qs: readonly number[]): { count: number; values: number[] } | null {
    const sample = this.samples.get(name);
    if (!sample || sample.kept.length === 0) return null;
    const sorted = [...sample.kept].sort((a, b) => a - b);
    return { count: sample.seen, values: qs.map((q) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] as number) };
  }
}

/** Resolves after `ms`, or early (without throwing) when the signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0 || signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** Full jitter around a base: uniformly in [base × (1 − ratio), base × (1 + ratio)]. */
export function jitter(baseMs: number, ratio: number, random: () => number = Math.random): number {
  const spread = baseMs * ratio;
  return Math.max(0, Math.round(baseMs - spread + random() * 2 * spread));
}

/**
 * Time is injected everywhere a decision depends on it, so tests advance a clock instead of
 * sleeping. Times are epoch milliseconds.
 */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock that only moves when told to. */
export class ManualClock implements Clock {
  constructor(private current = 1_700_000_000_000) {}
  now(): number {
    return this.current;
  }
  advance(ms: number): number {
    this.current += ms;
    return this.current;
  }
  set(ms: number): void {
    this.current = ms;
  }
}

/**
 * A clock corrected by a fixed offset, e.g. the difference between this process and the Redis
 * server, so workers on different machines agree on due times.
 */
export class OffsetClock implements Clock {
  constructor(
    public offsetMs = 0,
    private readonly base: Clock = systemClock,
  ) {}
  now(): number {
    return this.base.now() + this.offsetMs;
  }
}

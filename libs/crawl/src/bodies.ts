import { type Clock, systemClock } from '@trawl/core';

/** Bodies nobody took for this long belong to pages processed elsewhere (another process claimed them, or the lease went stale). */
const UNCLAIMED_MS = 120_000;

/**
 * Bodies the fetch stage stored lately, kept in memory for a process stage in the same process:
 * it reads a page's body from here instead of reading it back from the content store and
 * decompressing it. Bounded in bytes; a body not here is read from the store, so this only
 * saves work, it never holds the only copy.
 *
 * When it is full, a new body is refused rather than an old one dropped: the process stage
 * takes pages in the order they were handed off, so the oldest bodies are the next ones wanted.
 * Dropping them instead would miss on every page once the backlog outgrows the cap (measured: a
 * one-process crawl of the realistic benchmark web read 3 of every 4 bodies back from the store).
 * A body nobody took for `unclaimedMs` (its page was processed elsewhere) makes room.
 */
export class RecentBodies {
  private readonly bodies = new Map<string, { body: Buffer; at: number }>();
  private bytes = 0;

  constructor(
    private readonly maxBytes = 64 * 1024 * 1024,
    private readonly clock: Clock = systemClock,
    private readonly unclaimedMs = UNCLAIMED_MS,
  ) {}

  put(key: string, body: Buffer): void {
    if (body.length > this.maxBytes || this.bodies.has(key)) return;
    const now = this.clock.now();
    for (const [oldest, kept] of this.bodies) {
      if (this.bytes + body.length <= this.maxBytes) break;
      // Full of bodies still waiting for their turn: this one is read from the store at its own.
      if (now - kept.at < this.unclaimedMs) return;
      this.bodies.delete(oldest);
      this.bytes -= kept.body.length;
    }
    this.bodies.set(key, { body, at: now });
    this.bytes += body.length;
  }

  /** The body stored under `key` if it is still here (it is then forgotten). */
  take(key: string): Buffer | undefined {
    const kept = this.bodies.get(key);
    if (kept === undefined) return undefined;
    this.bodies.delete(key);
    this.bytes -= kept.body.length;
    return kept.body;
  }
}

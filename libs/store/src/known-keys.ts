import { contentKey, type PutResult } from './content-store.js';

/**
 * Body hashes this process stored or found stored, oldest forgotten first: a put of a body seen
 * recently skips even the existence check. Bounded, so a long crawl's memory stays flat.
 */
export class KnownKeys {
  private readonly hashes = new Set<string>();

  constructor(private readonly capacity: number) {}

  has(hash: string): boolean {
    return this.hashes.has(hash);
  }

  add(hash: string): void {
    this.hashes.delete(hash);
    this.hashes.add(hash);
    if (this.hashes.size > this.capacity) {
      const oldest = this.hashes.values().next().value;
      if (oldest !== undefined) this.hashes.delete(oldest);
    }
  }
}

/**
 * Concurrent puts of one body in this process share one write: the first caller writes, the
 * others wait for it and report `existed`. `settled()` is what `close()` waits for.
 */
export class PutsInFlight {
  private readonly writes = new Map<string, Promise<PutResult>>();

  async run(hash: string, write: () => Promise<PutResult>): Promise<PutResult> {
    const pending = this.writes.get(hash);
    if (pending !== undefined) {
      await pending;
      return { key: contentKey(hash), contentHash: hash, storedBytes: 0, existed: true };
    }
    const started = write().finally(() => this.writes.delete(hash));
    this.writes.set(hash, started);
    return started;
  }

  async settled(): Promise<void> {
    await Promise.allSettled(this.writes.values());
  }
}

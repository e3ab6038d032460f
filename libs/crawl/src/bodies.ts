/**
 * Bodies the fetch stage stored lately, kept in memory for a process stage in the same process:
 * it reads a page's body from here instead of reading it back from the content store and
 * decompressing it. Bounded in bytes (oldest out first); a body not here is read from the store,
 * so this only saves work, it never holds the only copy.
 */
export class RecentBodies {
  private readonly bodies = new Map<string, Buffer>();
  private bytes = 0;

  constructor(private readonly maxBytes = 64 * 1024 * 1024) {}

  put(key: string, body: Buffer): void {
    if (body.length > this.maxBytes || this.bodies.has(key)) return;
    this.bodies.set(key, body);
    this.bytes += body.length;
    for (const [oldest, kept] of this.bodies) {
      if (this.bytes <= this.maxBytes) break;
      this.bodies.delete(oldest);
      this.bytes -= kept.length;
    }
  }

  /** The body stored under `key` if it is still here (it is then forgotten). */
  take(key: string): Buffer | undefined {
    const body = this.bodies.get(key);
    if (body === undefined) return undefined;
    this.bodies.delete(key);
    this.bytes -= body.length;
    return body;
  }
}

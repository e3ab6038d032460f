/** The first capture of a payload in this export: what a later revisit refers to. */
export interface Capture {
  url: string;
  /** WARC-Date of the capture. */
  date: string;
  recordId: string;
  payloadDigest: string;
}

/**
 * Payloads already written, by sha256, oldest forgotten first so an export of any size keeps
 * flat memory (a forgotten payload is simply written in full again).
 */
export class KnownCaptures {
  private readonly captures = new Map<string, Capture>();

  constructor(private readonly capacity: number) {}

  get(contentHash: string): Capture | undefined {
    return this.captures.get(contentHash);
  }

  set(contentHash: string, capture: Capture): void {
    this.captures.set(contentHash, capture);
    if (this.captures.size > this.capacity) {
      const oldest = this.captures.keys().next().value;
      if (oldest !== undefined) this.captures.delete(oldest);
    }
  }
}

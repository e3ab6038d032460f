/**
 * Rendered pages kept in memory, up to a number of bytes, least recently served dropped first.
 * A realistic page takes about a millisecond of CPU to draw; a benchmark's web serves hundreds of
 * pages a second on the crawler's own cores, where a real web's servers would not be. With the
 * pages drawn once (`TestWeb.warmPages`) and kept, serving them costs the machine a copy, the same
 * for every crawler measured against the web.
 */
export class PageCache {
  private readonly pages = new Map<string, Buffer>();
  private size = 0;

  constructor(readonly maxBytes: number) {}

  get bytes(): number {
    return this.size;
  }

  get count(): number {
    return this.pages.size;
  }

  /** The page kept under `key`, else drawn by `render` (and kept if it fits). */
  get(key: string, render: () => string): Buffer {
    const kept = this.pages.get(key);
    if (kept) {
      // Most recently served last: the first in the map is the one to drop.
      this.pages.delete(key);
      this.pages.set(key, kept);
      return kept;
    }
    const page = Buffer.from(render(), 'utf8');
    if (page.byteLength > this.maxBytes) return page;
    this.pages.set(key, page);
    this.size += page.byteLength;
    for (const [oldest, body] of this.pages) {
      if (this.size <= this.maxBytes) break;
      this.pages.delete(oldest);
      this.size -= body.byteLength;
    }
    return page;
  }
}

import type { FetchedResponse, SubresourceCache } from './types.js';

export interface MemoryCacheOptions {
  /** Total body bytes kept; the least recently used go first. */
  maxBytes: number;
  /** A larger body is handed out but not kept. */
  maxEntryBytes: number;
}

/**
 * A crawl's subresource cache in this process's memory: the scripts and stylesheets its sites'
 * pages share. Concurrent misses for one URL wait on one load.
 */
export class MemorySubresourceCache implements SubresourceCache {
  private readonly entries = new Map<string, FetchedResponse>();
  private readonly loading = new Map<string, Promise<FetchedResponse>>();
  private bytes = 0;
  hits = 0;
  misses = 0;

  constructor(private readonly options: MemoryCacheOptions = { maxBytes: 64 * 1024 * 1024, maxEntryBytes: 4 * 1024 * 1024 }) {}

  async getOrLoad(url: string, load: () => Promise<FetchedResponse>, keep: (response: FetchedResponse) => boolean): Promise<{ response: FetchedResponse; hit: boolean }> {
    const known = this.entries.get(url);
    if (known !== undefined) {
      this.entries.delete(url);
      this.entries.set(url, known);
      this.hits++;
      return { response: known, hit: true };
    }
    const pending = this.loading.get(url);
    if (pending !== undefined) {
      this.hits++;
      return { response: await pending, hit: true };
    }
    this.misses++;
    const loading = load();
    this.loading.set(url, loading);
    try {
      const response = await loading;
      if (keep(response)) this.keep(url, response);
      return { response, hit: false };
    } finally {
      this.loading.delete(url);
    }
  }

  get size(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.bytes };
  }

  private keep(url: string, response: FetchedResponse): void {
    const size = response.body.length;
    if (size > this.options.maxEntryBytes) return;
    this.entries.set(url, response);
    this.bytes += size;
    for (const [oldUrl, old] of this.entries) {
      if (this.bytes <= this.options.maxBytes) break;
      this.entries.delete(oldUrl);
      this.bytes -= old.body.length;
    }
  }
}

/**
 * A small LRU map bounded by entry count and by a weight (roughly bytes), so a crawl of many
 * hosts with large robots.txt files keeps worker memory flat.
 */
export class BoundedLru<K, V> {
  private readonly map = new Map<K, { value: V; weight: number }>();
  private totalWeight = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly maxWeight = Number.POSITIVE_INFINITY,
    private readonly weigh: (value: V) => number = () => 1,
  ) {}

  get size(): number {
    return this.map.size;
  }

  get weight(): number {
    return this.totalWeight;
  }

  /** The value, marked as most recently used. */
  get(key: K): V | undefined {
    const slot = this.map.get(key);
    if (slot === undefined) return undefined;
    this.map.delete(key);
    this.map.set(key, slot);
    return slot.value;
  }

  set(key: K, value: V): void {
    this.delete(key);
    const weight = this.weigh(value);
    // Something heavier than the whole budget is not kept at all.
    if (this.maxEntries <= 0 || weight > this.maxWeight) return;
    this.map.set(key, { value, weight });
    this.totalWeight += weight;
    while (this.map.size > this.maxEntries || this.totalWeight > this.maxWeight) {
      const oldest = this.map.keys().next();
      if (oldest.done) break;
      this.delete(oldest.value);
    }
  }

  delete(key: K): boolean {
    const slot = this.map.get(key);
    if (slot === undefined) return false;
    this.map.delete(key);
    this.totalWeight -= slot.weight;
    return true;
  }

  clear(): void {
    this.map.clear();
    this.totalWeight = 0;
  }
}

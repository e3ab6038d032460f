import { bindScripts, loadScripts, type Redis, type ScriptCaller } from '@trawl/redis';

const SCRIPTS = loadScripts(import.meta.url, '../lua', ['renewOwnership-1', 'releaseOwnership-1']);

/**
 * Ownership of frontier partitions: `<namespace>:{p<n>}:owner` holds the owning member's id with
 * a TTL (in the partition's hash slot, beside its frontier keys). A member acquires a free
 * partition with SET NX PX, keeps it by renewing before the TTL runs out, and gives it up with a
 * compare-and-delete; a member that dies simply stops renewing, and the partition is free again
 * after the TTL.
 */
export class PartitionOwnership {
  private readonly scripts: Record<'renewOwnership' | 'releaseOwnership', ScriptCaller>;

  constructor(
    private readonly redis: Redis,
    private readonly namespace: string,
    readonly memberId: string,
    readonly ttlMs: number,
  ) {
    this.scripts = bindScripts(redis, SCRIPTS);
  }

  key(partition: number): string {
    return `${this.namespace}:{p${partition}}:owner`;
  }

  /** Takes the partition if nobody holds it. */
  async acquire(partition: number): Promise<boolean> {
    return (await this.redis.set(this.key(partition), this.memberId, 'PX', this.ttlMs, 'NX')) === 'OK';
  }

  /** Keeps the partition for another TTL; false when it was lost (expired, or taken over). */
  async renew(partition: number): Promise<boolean> {
    return Number(await this.scripts.renewOwnership([this.key(partition)], [this.memberId, this.ttlMs])) === 1;
  }

  async release(partition: number): Promise<boolean> {
    return Number(await this.scripts.releaseOwnership([this.key(partition)], [this.memberId])) === 1;
  }

  /** Who holds the partition now (null: nobody). */
  owner(partition: number): Promise<string | null> {
    return this.redis.get(this.key(partition));
  }
}

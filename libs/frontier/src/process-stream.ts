import { isCluster, type RedisClient } from '@trawl/redis';
import { type FrontierKeys, frontierKeys } from './keys.js';

/** The consumer group every process stage reads a partition's process stream in. */
export const PROCESS_GROUP = 'process';

/** One page waiting for (or held by) the process stage. */
export interface ProcessEntry {
  partition: number;
  /** The stream entry id (acknowledged with the page's lease once the page is recorded). */
  id: string;
  /** What the fetch stage handed over (see `Frontier.handOff`). */
  payload: string;
  /** How many times the entry has been handed to a process stage, this time included. */
  deliveries: number;
}

/** A stream entry id's time part: when it was added (epoch ms of the Redis server). */
export const entryTime = (id: string): number => Number(id.slice(0, id.indexOf('-')));

/** The idle time an expedited entry is given: a year, past any claim time. */
const EXPEDITED_IDLE_MS = 365 * 24 * 3600_000;

type RawEntries = [string, [string, string[]][]][] | null;

/**
 * The process stage's side of the partitions' process streams (the fetch stage writes them
 * through `Frontier.handOff`; `Frontier.ack` acknowledges and deletes an entry with its page's
 * lease). Each process stage reads as a consumer of its own name in one consumer group, so an
 * entry is handed to one of them at a time; one that dies leaves its entries pending, and
 * `claimStale` hands them to another.
 */
export class ProcessStream {
  private readonly keys: FrontierKeys[];
  private readonly grouped = new Set<number>();
  private turn = 0;

  constructor(
    /** A connection of its own: `read` blocks it (on a single Redis) while nothing is waiting. */
    private readonly redis: RedisClient,
    prefix: string,
    partitions: number,
    /** This process stage's consumer name (unique per process). */
    readonly consumer: string,
  ) {
    this.keys = Array.from({ length: partitions }, (_, p) => frontierKeys(prefix, p));
  }

  /**
   * New entries of these partitions, at most `count`, waiting up to `blockMs` for the first one.
   * On a single Redis one blocking call reads every partition; a cluster's partitions live in
   * different slots, so there each is read without blocking and an empty read waits `blockMs`.
   */
  async read(partitions: readonly number[], count: number, blockMs: number): Promise<ProcessEntry[]> {
    if (partitions.length === 0 || count <= 0) return [];
    await this.ensureGroups(partitions);
    try {
      if (!isCluster(this.redis)) {
        const keys = partitions.map((p) => this.keyOf(p));
        const reply = (await this.redis.xreadgroup(
          'GROUP', PROCESS_GROUP, this.consumer, 'COUNT', count, 'BLOCK', Math.max(1, Math.round(blockMs)), 'STREAMS', ...keys, ...keys.map(() => '>'),
        )) as RawEntries;
        return this.entries(reply, 1);
      }
      // One slot per partition: read them in turn, from a different one each time (no partition
      // waits behind another), never taking more than `count` (an entry read is this consumer's).
      const out: ProcessEntry[] = [];
      this.turn = (this.turn + 1) % partitions.length;
      for (let i = 0; i < partitions.length && out.length < count; i += 1) {
        const partition = partitions[(this.turn + i) % partitions.length] as number;
        const reply = (await this.redis.xreadgroup('GROUP', PROCESS_GROUP, this.consumer, 'COUNT', count - out.length, 'STREAMS', this.keyOf(partition), '>')) as RawEntries;
        out.push(...this.entries(reply, 1));
      }
      if (out.length === 0) await new Promise((resolve) => setTimeout(resolve, blockMs));
      return out;
    } catch (error) {
      // The stream (and its group) went with a wiped Redis: make them again on the next read.
      if (String(error).includes('NOGROUP')) this.grouped.clear();
      throw error;
    }
  }

  /**
   * Entries of a partition that a process stage has held for at least `idleMs` without
   * acknowledging them (it died, or it failed and left them for a retry): claimed for this
   * consumer, with how often each has been delivered.
   */
  async claimStale(partition: number, idleMs: number, count: number): Promise<ProcessEntry[]> {
    await this.ensureGroups([partition]);
    const key = this.keyOf(partition);
    const pending = (await this.redis.xpending(key, PROCESS_GROUP, 'IDLE', Math.max(0, Math.round(idleMs)), '-', '+', count)) as [string, string, number, number][];
    if (pending.length === 0) return [];
    const deliveries = new Map(pending.map(([id, , , times]) => [id, Number(times)]));
    const ids = pending.map(([id]) => id);
    const claimed = (await this.redis.call('XCLAIM', key, PROCESS_GROUP, this.consumer, Math.max(0, Math.round(idleMs)), ...ids)) as [string, string[]][];
    // XCLAIM counted this delivery; an entry deleted meanwhile (recorded after all) comes back empty.
    return claimed
      .filter((entry): entry is [string, string[]] => Array.isArray(entry) && Array.isArray(entry[1]))
      .map(([id, fields]) => ({ partition, id, payload: fieldOf(fields), deliveries: (deliveries.get(id) ?? 0) + 1 }));
  }

  /**
   * A process stage died (its worker's heartbeat lapsed): the entries held by every consumer
   * whose name starts with `consumerPrefix` are made stale at once (their idle time set past any
   * `claimStale` threshold, their owner unchanged), so the next claim of a living process stage
   * takes them instead of waiting out the claim time. Returns how many entries it marked.
   */
  async expedite(consumerPrefix: string): Promise<number> {
    let marked = 0;
    for (let partition = 0; partition < this.keys.length; partition += 1) {
      const key = this.keyOf(partition);
      if ((await this.redis.exists(key)) === 0) continue;
      const consumers = (await this.redis.call('XINFO', 'CONSUMERS', key, PROCESS_GROUP).catch(() => [])) as unknown[][];
      for (const info of consumers) {
        const name = String(info[info.indexOf('name') + 1]);
        if (!name.startsWith(consumerPrefix)) continue;
        for (;;) {
          const pending = (await this.redis.xpending(key, PROCESS_GROUP, '-', '+', 1000, name)) as [string, string, number, number][];
          if (pending.length === 0) break;
          await this.redis.call('XCLAIM', key, PROCESS_GROUP, name, 0, ...pending.map(([id]) => id), 'IDLE', EXPEDITED_IDLE_MS, 'JUSTID');
          marked += pending.length;
          if (pending.length < 1000) break;
        }
      }
    }
    return marked;
  }

  /**
   * Says this consumer still works on these entries (their idle time starts again), so a slow
   * but living process stage never has them claimed from under it.
   */
  async touch(partition: number, ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.redis.call('XCLAIM', this.keyOf(partition), PROCESS_GROUP, this.consumer, 0, ...ids, 'JUSTID');
  }

  private keyOf(partition: number): string {
    const keys = this.keys[partition];
    if (!keys) throw new Error(`no partition ${partition} (have ${this.keys.length})`);
    return keys.process;
  }

  private entries(reply: RawEntries, deliveries: number): ProcessEntry[] {
    if (!reply) return [];
    const partitionOf = new Map(this.keys.map((k, p) => [k.process, p]));
    return reply.flatMap(([key, list]) => list.map(([id, fields]) => ({ partition: partitionOf.get(key) as number, id, payload: fieldOf(fields), deliveries })));
  }

  /** The consumer group of each partition's stream, made (with the stream) if it is missing. */
  private async ensureGroups(partitions: readonly number[]): Promise<void> {
    const missing = partitions.filter((p) => !this.grouped.has(p));
    await Promise.all(
      missing.map(async (p) => {
        await this.redis.xgroup('CREATE', this.keyOf(p), PROCESS_GROUP, '0', 'MKSTREAM').catch((error: unknown) => {
          if (!String(error).includes('BUSYGROUP')) throw error;
        });
        this.grouped.add(p);
      }),
    );
  }
}

const fieldOf = (fields: readonly string[]): string => {
  const at = fields.indexOf('d');
  return at >= 0 ? (fields[at + 1] ?? '') : '';
};

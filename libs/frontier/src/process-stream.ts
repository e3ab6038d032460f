import { isCluster, type RedisClient } from '@trawl/redis';
import { type FrontierKeys, frontierKeys } from './keys.js';

/** The consumer group every process stage reads a partition's process stream in. */
export const PROCESS_GROUP = 'process';

/** One page waiting for (or held by) the process stage. */
export interface ProcessEntry {
  partition: number;
  /**
   * The stream entry id (acknowledged with the page's lease once the page is recorded); "u:<id>"
   * for an entry of the partition's urgent stream.
   */
  id: string;
  /** The page's host had nothing else queued when it was handed off: its next fetch waits on this page's links. */
  urgent: boolean;
  /** What the fetch stage handed over (see `Frontier.handOff`). */
  payload: string;
  /** How many times the entry has been handed to a process stage, this time included. */
  deliveries: number;
}

/** How an urgent stream's entry ids are told from the plain stream's (see `Frontier.handOff`). */
const URGENT = 'u:';

/** A stream entry id's time part: when it was added (epoch ms of the Redis server). */
export const entryTime = (id: string): number => Number(id.slice(id.startsWith(URGENT) ? URGENT.length : 0, id.indexOf('-')));

/** The idle time an expedited entry is given: a year, past any claim time. */
const EXPEDITED_IDLE_MS = 365 * 24 * 3600_000;

type RawEntries = [string, [string, string[]][]][] | null;

/**
 * The process stage's side of the partitions' process streams (the fetch stage writes them
 * through `Frontier.handOff`; `Frontier.ack` acknowledges and deletes an entry with its page's
 * lease). Each partition has two: the urgent one, for pages whose host waits on their links,
 * is read first. Each process stage reads as a consumer of its own name in one consumer group,
 * so an entry is handed to one of them at a time; one that dies leaves its entries pending, and
 * `claimStale` hands them to another.
 */
export class ProcessStream {
  private readonly keys: FrontierKeys[];
  /** Each stream key's partition, and whether it is the partition's urgent stream. */
  private readonly streams: ReadonlyMap<string, { partition: number; urgent: boolean }>;
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
    this.streams = new Map<string, { partition: number; urgent: boolean }>(
      this.keys.flatMap((k, partition) => [
        [k.process, { partition, urgent: false }],
        [k.urgent, { partition, urgent: true }],
      ]),
    );
  }

  /**
   * New entries of these partitions, about `count` of them, urgent ones first, waiting up to
   * `blockMs` for the first one. On a single Redis one blocking call reads every stream of every
   * partition; its COUNT applies to each stream, so each is asked for an even share of `count`
   * (rounded up): fewer than one entry per stream more than `count` comes back (one partition, two
   * streams: at most one more), where asking each stream for `count` would let one reader take
   * a whole backlog that other process stages could be working on. A cluster's
   * partitions live in different slots, so there each stream is read without blocking, urgent
   * ones first, never taking more than `count`, and an empty read waits `blockMs`.
   */
  async read(partitions: readonly number[], count: number, blockMs: number): Promise<ProcessEntry[]> {
    if (partitions.length === 0 || count <= 0) return [];
    await this.ensureGroups(partitions);
    try {
      if (!isCluster(this.redis)) {
        const keys = [...partitions.map((p) => this.keyOf(p, true)), ...partitions.map((p) => this.keyOf(p, false))];
        const reply = (await this.redis.xreadgroup(
          'GROUP', PROCESS_GROUP, this.consumer, 'COUNT', Math.ceil(count / keys.length), 'BLOCK', Math.max(1, Math.round(blockMs)), 'STREAMS', ...keys, ...keys.map(() => '>'),
        )) as RawEntries;
        return this.entries(reply, 1);
      }
      // One slot per partition: read them in turn, from a different one each time (no partition
      // waits behind another), never taking more than `count` (an entry read is this consumer's).
      const out: ProcessEntry[] = [];
      this.turn = (this.turn + 1) % partitions.length;
      for (const urgent of [true, false]) {
        for (let i = 0; i < partitions.length && out.length < count; i += 1) {
          const partition = partitions[(this.turn + i) % partitions.length] as number;
          const reply = (await this.redis.xreadgroup('GROUP', PROCESS_GROUP, this.consumer, 'COUNT', count - out.length, 'STREAMS', this.keyOf(partition, urgent), '>')) as RawEntries;
          out.push(...this.entries(reply, 1));
        }
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
    const out: ProcessEntry[] = [];
    for (const urgent of [true, false]) {
      if (out.length >= count) break;
      const key = this.keyOf(partition, urgent);
      const idle = Math.max(0, Math.round(idleMs));
      const pending = (await this.redis.xpending(key, PROCESS_GROUP, 'IDLE', idle, '-', '+', count - out.length)) as [string, string, number, number][];
      if (pending.length === 0) continue;
      const deliveries = new Map(pending.map(([id, , , times]) => [id, Number(times)]));
      const claimed = (await this.redis.call('XCLAIM', key, PROCESS_GROUP, this.consumer, idle, ...pending.map(([id]) => id))) as [string, string[]][];
      // XCLAIM counted this delivery; an entry deleted meanwhile (recorded after all) comes back empty.
      for (const entry of claimed) {
        if (!Array.isArray(entry) || !Array.isArray(entry[1])) continue;
        const [id, fields] = entry;
        out.push({ partition, id: urgent ? URGENT + id : id, urgent, payload: fieldOf(fields), deliveries: (deliveries.get(id) ?? 0) + 1 });
      }
    }
    return out;
  }

  /**
   * A process stage died (its worker's heartbeat lapsed): the entries held by every consumer
   * whose name starts with `consumerPrefix` are made stale at once (their idle time set past any
   * `claimStale` threshold, their owner unchanged), so the next claim of a living process stage
   * takes them instead of waiting out the claim time. Returns how many entries it marked.
   */
  async expedite(consumerPrefix: string): Promise<number> {
    let marked = 0;
    for (const key of this.keys.flatMap((k) => [k.urgent, k.process])) {
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
    for (const urgent of [true, false]) {
      const own = ids.filter((id) => id.startsWith(URGENT) === urgent).map((id) => (urgent ? id.slice(URGENT.length) : id));
      if (own.length > 0) await this.redis.call('XCLAIM', this.keyOf(partition, urgent), PROCESS_GROUP, this.consumer, 0, ...own, 'JUSTID');
    }
  }

  private keyOf(partition: number, urgent: boolean): string {
    const keys = this.keys[partition];
    if (!keys) throw new Error(`no partition ${partition} (have ${this.keys.length})`);
    return urgent ? keys.urgent : keys.process;
  }

  private entries(reply: RawEntries, deliveries: number): ProcessEntry[] {
    if (!reply) return [];
    return reply.flatMap(([key, list]) => {
      const { partition, urgent } = this.streams.get(key) as { partition: number; urgent: boolean };
      return list.map(([id, fields]) => ({ partition, id: urgent ? URGENT + id : id, urgent, payload: fieldOf(fields), deliveries }));
    });
  }

  /** The consumer group of each partition's streams, made (with the streams) if they are missing. */
  private async ensureGroups(partitions: readonly number[]): Promise<void> {
    const missing = partitions.filter((p) => !this.grouped.has(p));
    await Promise.all(
      missing.map(async (p) => {
        for (const urgent of [true, false]) {
          await this.redis.xgroup('CREATE', this.keyOf(p, urgent), PROCESS_GROUP, '0', 'MKSTREAM').catch((error: unknown) => {
            if (!String(error).includes('BUSYGROUP')) throw error;
          });
        }
        this.grouped.add(p);
      }),
    );
  }
}

const fieldOf = (fields: readonly string[]): string => {
  const at = fields.indexOf('d');
  return at >= 0 ? (fields[at + 1] ?? '') : '';
};

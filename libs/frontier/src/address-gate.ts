import type { Clock } from '@trawl/core';
import { bindScripts, loadScripts, type RedisClient, type ScriptCaller } from '@trawl/redis';

const SCRIPTS = loadScripts(import.meta.url, '../lua', ['acquireAddress-3', 'releaseAddress-2']);
type ScriptName = 'acquireAddress' | 'releaseAddress';

/**
 * The keys of one address group (a server address `ip:<address>`, or a registrable domain
 * `domain:<name>`). A group spans partitions (its hosts hash anywhere), so its keys carry a hash
 * tag of their own, `{a:<group>}`, and each gate call touches that one slot.
 */
export interface AddressGroupKeys {
  /** ZSET holder (lease id) -> until when its in-flight slot is held. */
  slots: string;
  /** ZSET holder -> the start time reserved for it. */
  book: string;
  /** HASH: `next`, the group's earliest next start (epoch ms); `cycle`, its last request's start to the next start it allowed (ms). */
  state: string;
}

export function addressGroupKeys(prefix: string, group: string): AddressGroupKeys {
  const base = `${prefix}:{a:${group}}:`;
  return { slots: `${base}slots`, book: `${base}book`, state: `${base}state` };
}

/** How many requests of a group may be in flight at once, and how far apart their starts are. */
export interface AddressLimits {
  maxInFlight: number;
  minIntervalMs: number;
  /** The least spacing of the start times reserved for waiting jobs (default: the gate's `stepMs`). */
  stepMs?: number;
}

export type AddressDecision = { kind: 'ok' } | { kind: 'wait'; at: number };

export interface AddressGateOptions {
  prefix: string;
  clock: Clock;
  /** How long a slot is held at most (a dead worker's slot frees itself then): the fetch hold. */
  holdMs: number;
  /** The least spacing of reserved start times, so waiting jobs come back one by one. Default 25. */
  stepMs?: number;
  /**
   * How long past its time a reservation waits for its job, which comes back through the queue's
   * delayed set (up to ~100 ms late) and the host gate. Default 2000.
   */
  graceMs?: number;
}

/**
 * The address gate, in Redis so that it holds across every worker process: at most `maxInFlight`
 * requests of one group at once, starts no closer than the group's next start time. See
 * lua/acquireAddress-3.lua and docs/architecture.md.
 */
export class AddressGate {
  private readonly scripts: Record<ScriptName, ScriptCaller>;

  constructor(
    redis: RedisClient,
    private readonly options: AddressGateOptions,
  ) {
    this.scripts = bindScripts<ScriptName>(redis, SCRIPTS);
  }

  /**
   * May `holder` start a request of `group` now? Refused, it is handed a start time of its own.
   * `force` counts a request already under way (never refused), or keeps a slot its holder has;
   * `holdMs` holds the slot that long instead of the gate's hold (a page handed to a render
   * stage keeps its slot as long as its lease); `probe` is one try that reserves nothing when
   * refused (its `at` is only when it might pass).
   */
  async acquire(group: string, holder: string, limits: AddressLimits, options: { force?: boolean; probe?: boolean; holdMs?: number } = {}): Promise<AddressDecision> {
    const keys = addressGroupKeys(this.options.prefix, group);
    const [code, at] = (await this.scripts.acquireAddress(
      [keys.slots, keys.book, keys.state],
      [
        holder,
        this.options.clock.now(),
        Math.ceil(options.holdMs ?? this.options.holdMs),
        limits.maxInFlight,
        limits.minIntervalMs,
        limits.stepMs ?? this.options.stepMs ?? 25,
        this.options.graceMs ?? 2000,
        options.force ? 1 : 0,
        options.probe ? 1 : 0,
      ],
    )) as [number, number];
    if (code === 1) return { kind: 'ok' };
    if (code === 2) return { kind: 'wait', at: Number(at) };
    throw new Error(`acquireAddress returned unknown code ${code}`);
  }

  /**
   * The request has ended: frees the slot; the group's next start is no earlier than `nextAt` (0:
   * no delay). `holdMs`: the hold the slot was last taken or kept with, when not the gate's.
   */
  async release(group: string, holder: string, nextAt = 0, holdMs?: number): Promise<boolean> {
    const keys = addressGroupKeys(this.options.prefix, group);
    const held = await this.scripts.releaseAddress([keys.slots, keys.state], [holder, this.options.clock.now(), Math.ceil(nextAt), Math.ceil(holdMs ?? this.options.holdMs)]);
    return held === 1;
  }
}

import { sleep } from '@trawl/core';
import type { AddressGate, AddressLimits } from '@trawl/frontier';
import { registrableDomain } from '@trawl/url';
import type { Attempt } from '../attempt.js';
import type { PipelineDeps } from '../deps.js';

/** The politeness group settings of the crawl policy (TRAWL_POLITENESS_KEY, TRAWL_IP_*). */
export interface AddressSettings {
  key: 'host' | 'ip' | 'domain';
  ipMaxInFlight: number;
  ipMinIntervalMs: number;
  /** The crawl's per-host delay (TRAWL_MIN_DELAY_MS): about one turn of a strict group, the spacing of its waiting jobs' start times. */
  minDelayMs: number;
}

/**
 * A slot of an address group a turn holds in the gate (in Redis): `strict` when the group is the
 * politeness group, whose next start waits for the delay the host's release asks.
 */
export interface AddressHold {
  group: string;
  strict: boolean;
}

/**
 * A request's turn at its address group: `go` (then `leave` once its response has ended or
 * failed, with the host's next due time), or `wait` until `at`, the start time reserved for it.
 * A page handed to a render stage with its host held keeps its turn too: `handOver` ends the
 * turn here without freeing its slots and names them, for the render stage to keep and release.
 */
export type AddressTurn = { kind: 'go'; leave(nextAt: number): void; handOver(): AddressHold[] } | { kind: 'wait'; at: number };

/** Where the fetch stage takes its address turn (absent from the pipeline: no address gate). */
export interface AddressTurns {
  /** `probe`: one try that reserves no start time when refused (a borrowed turn of another host, see other-hosts.ts). */
  enter(request: { host: string; hostname: string; holder: string }, settings: AddressSettings, options?: { probe?: boolean }): Promise<AddressTurn>;
  /** Keeps slots a turn handed over `holder`'s (the lease's) for `holdMs` from now, as long as its lease. */
  keep(held: readonly AddressHold[], holder: string, holdMs: number): Promise<void>;
  /** Frees slots a turn handed over: as `leave` would, `holdMs` being the hold they were kept with. */
  release(held: readonly AddressHold[], holder: string, nextAt: number, holdMs: number): Promise<void>;
}

export interface AddressGroupsDeps {
  gate: Pick<AddressGate, 'acquire' | 'release'>;
  /** The server address a request to `hostname` connects to, from the fetcher's DNS cache; null: it does not resolve. */
  serverAddress(hostname: string): Promise<string | null>;
  /** A release that failed (its slot lapses with its hold). */
  onError(error: unknown): void;
  /** Addresses remembered (the oldest are forgotten). Default 100,000. */
  maxAddresses?: number;
}

const UNGATED: AddressTurn = { kind: 'go', leave: () => undefined, handOver: () => [] };

/**
 * The address gate for one request, asked as the lease's holder (a lease is one URL, and only the
 * attempt holding its host gets here, so the holder is the same when a deferred job comes back).
 * A reserved time within `gateWaitMs` is waited for here, as the host gate does; a later one
 * sends the job back to the queue.
 */
export async function passAddressGate(
  deps: Pick<PipelineDeps, 'addresses' | 'clock' | 'gateWaitMs'>,
  attempt: Attempt,
  holder: string,
  settings: AddressSettings,
): Promise<AddressTurn> {
  const { addresses, clock } = deps;
  if (addresses === undefined) return UNGATED;
  const request = { host: attempt.job.host, hostname: new URL(attempt.job.url).hostname, holder };
  let turn = await addresses.enter(request, settings);
  for (let tries = 0; turn.kind === 'wait' && turn.at - clock.now() <= deps.gateWaitMs && tries < 3; tries += 1) {
    await sleep(Math.max(0, turn.at - clock.now()));
    turn = await addresses.enter(request, settings);
  }
  return turn;
}

/**
 * The address gate as the fetch stage takes it, per politeness key:
 * - `ip`: one request in flight per server address, the next starting no sooner than the delay
 *   the last one's release asked (and TRAWL_IP_MIN_INTERVAL_MS after the last start);
 * - `domain`: the same per registrable domain (no address needed), and the per-address cap below;
 * - `host`: the host gate is the politeness group; the address gate only caps what one server
 *   address gets (TRAWL_IP_MAX_IN_FLIGHT, TRAWL_IP_MIN_INTERVAL_MS), and only on addresses this
 *   process has seen serve more than one host name: an address with one name is already held to
 *   one request in flight by its host gate, so a crawl of distinct sites costs no Redis call. When
 *   an address turns out to be shared, the requests this process has in flight to it ungated are
 *   counted at once (forced) before the new one asks.
 */
export class AddressGroups implements AddressTurns {
  /** Server address -> the one host name seen on it, or null once several were. */
  private readonly names = new Map<string, string | null>();
  /** Server address -> requests in flight to it not through the gate -> whether counted since. */
  private readonly ungated = new Map<string, Map<string, boolean>>();
  private readonly maxAddresses: number;

  constructor(private readonly deps: AddressGroupsDeps) {
    this.maxAddresses = deps.maxAddresses ?? 100_000;
  }

  async enter(request: { host: string; hostname: string; holder: string }, settings: AddressSettings, options: { probe?: boolean } = {}): Promise<AddressTurn> {
    const { hostname, holder } = request;
    const probe = options.probe === true;
    // A strict group serves one request per delay: its waiting jobs are spaced about that far apart.
    const strict = { maxInFlight: 1, stepMs: Math.max(settings.minDelayMs, settings.ipMinIntervalMs) };
    if (settings.key === 'domain') {
      const domain = await this.gated(`domain:${registrableDomain(hostname)}`, holder, { ...strict, minIntervalMs: 0 }, true, probe);
      if (domain.kind === 'wait') return domain;
      // The per-address cap holds here too: one owner's subdomains may share a server with others' sites.
      const cap = await this.capTurn(request, settings, probe);
      if (cap.kind === 'wait') {
        domain.leave(0);
        return cap;
      }
      return {
        kind: 'go',
        leave: (nextAt) => {
          cap.leave(nextAt);
          domain.leave(nextAt);
        },
        handOver: () => [...domain.handOver(), ...cap.handOver()],
      };
    }
    if (settings.key === 'ip') {
      const address = await this.deps.serverAddress(hostname);
      // A name that does not resolve: the request meets its (cached) DNS failure as it always did.
      if (address === null) return UNGATED;
      return this.gated(`ip:${address}`, holder, { ...strict, minIntervalMs: settings.ipMinIntervalMs }, true, probe);
    }
    return this.capTurn(request, settings, probe);
  }

  async keep(held: readonly AddressHold[], holder: string, holdMs: number): Promise<void> {
    // Forced: the request is under way (the slot is the holder's already, for as long as its lease).
    await Promise.all(held.map((slot) => this.deps.gate.acquire(slot.group, holder, { maxInFlight: 1, minIntervalMs: 0 }, { force: true, holdMs })));
  }

  async release(held: readonly AddressHold[], holder: string, nextAt: number, holdMs: number): Promise<void> {
    await Promise.all(held.map((slot) => this.deps.gate.release(slot.group, holder, slot.strict ? nextAt : 0, holdMs)));
  }

  /** The per-address cap (TRAWL_IP_MAX_IN_FLIGHT, TRAWL_IP_MIN_INTERVAL_MS), asked only of addresses seen with several host names. */
  private async capTurn(request: { host: string; hostname: string; holder: string }, settings: AddressSettings, probe: boolean): Promise<AddressTurn> {
    const { host, hostname, holder } = request;
    const address = await this.deps.serverAddress(hostname);
    if (address === null) return UNGATED;
    const group = `ip:${address}`;
    const limits = { maxInFlight: settings.ipMaxInFlight, minIntervalMs: settings.ipMinIntervalMs };
    if (!this.sharedAddress(address, host)) return this.ungatedTurn(address, group, holder);
    const running = this.ungated.get(address);
    if (running !== undefined) {
      // Sent before this request's own ask, on the same connection: Redis sees them first.
      for (const [other, counted] of running) {
        if (counted) continue;
        running.set(other, true);
        this.deps.gate.acquire(group, other, limits, { force: true }).catch((error: unknown) => this.deps.onError(error));
      }
    }
    return this.gated(group, holder, limits, false, probe);
  }

  /** Remembers `host` on `address`; true once the address has served another host name too. */
  private sharedAddress(address: string, host: string): boolean {
    const known = this.names.get(address);
    if (known === null) return true;
    if (known === host) return false;
    if (known === undefined) {
      this.names.set(address, host);
      while (this.names.size > this.maxAddresses) {
        const oldest = this.names.keys().next().value as string;
        this.names.delete(oldest);
      }
      return false;
    }
    this.names.set(address, null);
    return true;
  }

  private ungatedTurn(address: string, group: string, holder: string): AddressTurn {
    const running = this.ungated.get(address) ?? new Map<string, boolean>();
    this.ungated.set(address, running);
    running.set(holder, false);
    /** Forgets the request here; true if it was counted in the gate since (it holds a slot there). */
    const forget = (): boolean => {
      const counted = running.get(holder) === true;
      running.delete(holder);
      if (running.size === 0 && this.ungated.get(address) === running) this.ungated.delete(address);
      return counted;
    };
    return {
      kind: 'go',
      leave: () => {
        if (forget()) this.deps.gate.release(group, holder, 0).catch((error: unknown) => this.deps.onError(error));
      },
      handOver: () => (forget() ? [{ group, strict: false }] : []),
    };
  }

  /**
   * Asks the gate. `strict`: the group is the politeness group, so the delay the host's release
   * asks (`nextAt`) holds for the whole group; otherwise only the cap and the interval do.
   */
  private async gated(group: string, holder: string, limits: AddressLimits, strict: boolean, probe: boolean): Promise<AddressTurn> {
    const decision = await this.deps.gate.acquire(group, holder, limits, probe ? { probe } : {});
    if (decision.kind === 'wait') return decision;
    return {
      kind: 'go',
      leave: (nextAt) => {
        this.deps.gate.release(group, holder, strict ? nextAt : 0).catch((error: unknown) => this.deps.onError(error));
      },
      handOver: () => [{ group, strict }],
    };
  }
}

import type { Database } from '@trawl/db';
import type { Frontier } from '@trawl/frontier';
import type { Logger } from '@trawl/telemetry';

export interface RefillDeps {
  db: Pick<Database, 'takeSpilled' | 'unsettledRefills' | 'settleRefill'>;
  frontier: Pick<Frontier, 'beginRefill' | 'landRefill' | 'settleRefill'>;
  logger: Logger;
}

export interface RefillOptions {
  /** Hosts refilled per round at most. */
  maxHosts: number;
  /**
   * How long a round may take (its lock): a round that takes longer lands nothing, and its rows
   * are settled (taken again) by the next round.
   */
  lockMs: number;
  /**
   * How long a host whose spilled count says PostgreSQL holds URLs of it, but where none is
   * found, keeps that count (its push's rows may still be on their way to PostgreSQL).
   */
  graceMs: number;
}

export const REFILL_DEFAULTS: RefillOptions = { maxHosts: 200, lockMs: 30_000, graceMs: 600_000 };

/**
 * Refills the frontier from PostgreSQL (TRAWL_FRONTIER_REDIS_MAX_URLS): hosts whose back queues in
 * Redis run low get their best spilled URLs back — highest band, then discovery order — before
 * they run dry. A round of a partition, at most one at a time (the frontier's refill lock):
 *
 * 1. the frontier names the hosts running low and takes the lock (`beginRefill`);
 * 2. rows still tagged by an earlier round (it died, failed or stalled past its lock) are settled:
 *    Redis says whether that round landed (then the rows are in Redis: no longer spilled) or
 *    marks it void for good (then the rows are free again) — so nothing is queued twice, and
 *    nothing is left behind;
 * 3. each host's best spilled rows are tagged with this round's token (`takeSpilled`);
 * 4. the frontier appends them to their back queues, once per token, and only while the round
 *    holds the lock (`landRefill`);
 * 5. PostgreSQL records the outcome (`settleRefill`). A crash before it leaves the rows tagged,
 *    for step 2 of the next round.
 */
export class FrontierRefill {
  private readonly options: RefillOptions;

  constructor(
    private readonly deps: RefillDeps,
    options: Partial<RefillOptions> = {},
  ) {
    this.options = { ...REFILL_DEFAULTS, ...options };
  }

  /** One round for a partition; returns how many URLs it put back into Redis. */
  async run(partition: number): Promise<number> {
    const { db, frontier } = this.deps;
    const ticket = await frontier.beginRefill(partition, this.options.maxHosts, this.options.lockMs);
    if (ticket === null) return 0;
    try {
      for (const token of await db.unsettledRefills(partition)) {
        if (token === ticket.token) continue;
        const outcome = await frontier.settleRefill(partition, token);
        await db.settleRefill(token, outcome === 'applied');
        this.deps.logger.warn({ partition, token, outcome }, 'settled a refill that had not recorded its outcome');
      }
      const items = await db.takeSpilled(ticket.token, ticket.hosts);
      const found = new Map<string, number>();
      for (const item of items) found.set(item.host, (found.get(item.host) ?? 0) + 1);
      const outcome = await frontier.landRefill(ticket, found, items, this.options.graceMs);
      if (outcome === 'void') {
        // The round outlived its lock: the next round settles its rows.
        this.deps.logger.warn({ partition, token: ticket.token }, 'a refill took longer than its lock and landed nothing');
        return 0;
      }
      await db.settleRefill(ticket.token, true);
      return outcome === 'landed' ? items.length : 0;
    } catch (error) {
      // Void this round at once (and free the lock) so the next one need not wait for the lock to lapse.
      const outcome = await frontier.settleRefill(partition, ticket.token).catch(() => null);
      if (outcome !== null) await db.settleRefill(ticket.token, outcome === 'applied').catch(() => undefined);
      throw error;
    }
  }
}

import { OperatorQueries } from '@trawl/db';
import type { Runtime } from './runtime.js';

/**
 * Puts the operator pauses PostgreSQL records (`paused_hosts`; host `*` is the whole crawl) back
 * into the frontier. Pausing is idempotent, so any process may call it at start (the dashboard,
 * the scheduler) and a frontier rebuilt after Redis lost its data gets its pauses back.
 * Returns how many pauses were restored.
 */
export async function restorePauses(runtime: Pick<Runtime, 'db' | 'frontier' | 'config'>): Promise<number> {
  const rows = await new OperatorQueries(runtime.db.pool, runtime.config.namespace).pausedHosts();
  const hosts = rows.filter((r) => r.host !== '*' && r.reason === null).map((r) => r.host);
  if (rows.some((r) => r.host === '*')) await runtime.frontier.pauseAll();
  if (hosts.length > 0) await runtime.frontier.pauseHosts(hosts);
  // Hosts paused as blocked keep their reason.
  for (const row of rows) if (row.host !== '*' && row.reason !== null) await runtime.frontier.pauseBlocked(row.host, row.reason);
  return rows.length;
}

/**
 * Pauses a host the block detector judged blocked with no proxy tier left: in the frontier (with
 * its reason, which every process and the dashboard see) and in PostgreSQL, so the pause
 * outlives Redis like an operator's. Resuming it (dashboard, API) ends both.
 */
export async function pauseBlockedHost(runtime: Pick<Runtime, 'db' | 'frontier' | 'config'>, host: string, reason: string): Promise<void> {
  await runtime.frontier.pauseBlocked(host, reason);
  await new OperatorQueries(runtime.db.pool, runtime.config.namespace).setBlocked(host, reason);
}

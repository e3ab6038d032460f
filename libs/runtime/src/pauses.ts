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
  const hosts = rows.map((r) => r.host).filter((h) => h !== '*');
  if (rows.some((r) => r.host === '*')) await runtime.frontier.pauseAll();
  if (hosts.length > 0) await runtime.frontier.pauseHosts(hosts);
  return rows.length;
}

// Measures the statistics snapshot (GET /v1/crawl/stats) with N hosts queued (default 20,000) in a
// throw-away namespace on the local Redis and PostgreSQL:
//   node --conditions=trawl-source --import tsx apps/dashboard/scripts/measure-stats.ts 20000
import { loadConfig } from '@trawl/config';
import { Runtime } from '@trawl/runtime';
import { createLogger } from '@trawl/telemetry';
import { createRedis, deleteByPrefix } from '@trawl/redis';
import { Database } from '@trawl/db';
import { startDashboard } from '../src/index.js';

const ns = `t_dashmeasure_${Date.now() % 100000}`;
const config = loadConfig({ env: { TRAWL_NAMESPACE: ns, TRAWL_API_TOKENS: 'measure-token-0123456789', TRAWL_PARTITIONS: '4' } });
const runtime = await Runtime.open({ config, redisUrl: 'redis://127.0.0.1:6379', databaseUrl: 'postgres://postgres@127.0.0.1:5432/postgres', logger: createLogger({ level: 'warn', name: 'm' }), role: 'dashboard' });
const HOSTS = Number(process.argv[2] ?? 20000);
for (let i = 0; i < HOSTS; i += 5000) {
  await runtime.frontier.push(Array.from({ length: Math.min(5000, HOSTS - i) }, (_, j) => ({ url: `http://h${i + j}.example/`, host: `h${i + j}.example`, depth: 0, hops: 0, flags: 0, priority: 0.5 })));
}
const server = await startDashboard(runtime, { host: '127.0.0.1', port: 0 });
const times: number[] = [];
for (let k = 0; k < 5; k += 1) {
  server.operator.stats.clear();
  const t = performance.now();
  const res = await fetch(`${server.url}/v1/crawl/stats`, { headers: { authorization: 'Bearer measure-token-0123456789' } });
  const body = await res.json();
  times.push(performance.now() - t);
  if (k === 0) console.log(JSON.stringify({ hosts: HOSTS, queued: body.frontier.queued, capacity: body.rate.politeCapacityPerSecond, sampled: body.rate.hostsSampled }));
}
const before = Number((await runtime.redis.info('commandstats')).match(/cmdstat_\w+:calls=(\d+)/g)?.reduce((s, m) => s + Number(m.split('=')[1]), 0));
server.operator.stats.clear();
await fetch(`${server.url}/v1/crawl/stats`, { headers: { authorization: 'Bearer measure-token-0123456789' } });
const after = Number((await runtime.redis.info('commandstats')).match(/cmdstat_\w+:calls=(\d+)/g)?.reduce((s, m) => s + Number(m.split('=')[1]), 0));
console.log(JSON.stringify({ snapshotMs: times.map((t) => Math.round(t)), redisCommandsPerSnapshot: after - before }));
await server.close();
await runtime.close();
const r = createRedis('redis://127.0.0.1:6379'); await deleteByPrefix(r, `${ns}:`); r.disconnect();
const db = new Database({ url: 'postgres://postgres@127.0.0.1:5432/postgres', schema: ns }); await db.dropSchema(); await db.close();

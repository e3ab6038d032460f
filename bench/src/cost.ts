import { type ChildProcess, execFileSync, fork } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { PrivatePostgres, PrivateRedis, REPO, runCrawlProcesses, trawlRuntime, uniqueNamespace } from '@trawl/cli/testing';
import { createRedis, loadScript } from '@trawl/redis';
import { analyzeLog } from '@trawl/testweb';
import pg from 'pg';
import { replyFrom } from './child.js';
import type { ConnectionStats } from './redis-proxy.js';
import { fmt, machine, table, writeSection } from './report.js';
import { postgresCpuMs, redisCpuMs } from './service-cpu.js';
import { cpuByThreadKind, ThreadCpuSampler } from './thread-cpu.js';
import { type BenchProfile, profiledWeb, startBenchWeb } from './web-profile.js';

/** SHA-1 → name of every Lua script trawl and BullMQ register (ioredis' EVALSHA hashes the body as given). */
async function scriptNames(): Promise<Map<string, string>> {
  const names = new Map<string, string>();
  const sha = (lua: string) => createHash('sha1').update(lua).digest('hex');
  for (const root of ['libs', 'apps']) {
    for (const pkg of readdirSync(join(REPO, root))) {
      const dir = join(REPO, root, pkg, 'lua');
      if (!existsSync(dir)) continue;
      for (const file of readdirSync(dir).filter((f) => /^\w+-\d+\.lua$/.test(f))) {
        const script = loadScript(dir, file.replace(/\.lua$/, ''));
        names.set(sha(script.lua), `trawl ${script.name}`);
      }
    }
  }
  const bullmq = join(REPO, 'node_modules', 'bullmq', 'dist', 'esm', 'scripts');
  for (const file of readdirSync(bullmq).filter((f) => /-\d+\.js$/.test(f))) {
    const module = (await import(pathToFileURL(join(bullmq, file)).href)) as Record<string, { name: string; content: string }>;
    for (const script of Object.values(module)) if (script && typeof script.content === 'string') names.set(sha(script.content), `BullMQ ${script.name}`);
  }
  return names;
}

function info(redis: PrivateRedis, section: string): string {
  return redis.cli('INFO', section);
}

function commandStats(redis: PrivateRedis): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of info(redis, 'commandstats').matchAll(/cmdstat_([^:]+):calls=(\d+)/g)) out.set(m[1] as string, Number(m[2]));
  return out;
}

/**
 * Redis's own execution time by top-level command, EVALSHA told apart by script name, from the
 * slow log with a 0 µs threshold (it records every command a client runs, with its duration; a
 * blocking command's wait is not in it). The log costs the server CPU of its own, so it is on only
 * when BENCH_COST_REDIS_TIMES=1 and those runs' other Redis figures are not comparable.
 */
const REDIS_TIMES = process.env.BENCH_COST_REDIS_TIMES === '1';

function startCommandLog(redis: PrivateRedis): void {
  redis.cli('CONFIG', 'SET', 'slowlog-max-len', '2000000');
  redis.cli('CONFIG', 'SET', 'slowlog-log-slower-than', '0');
  redis.cli('SLOWLOG', 'RESET');
}

async function readCommandLog(redis: PrivateRedis, names: ReadonlyMap<string, string>): Promise<[string, number, number][]> {
  const client = createRedis(redis.url, { name: 'bench-slowlog', autoPipelining: false });
  try {
    await client.config('SET', 'slowlog-log-slower-than', '-1');
    const entries = (await client.call('SLOWLOG', 'GET', '-1')) as [number, number, number, string[]][];
    const byName = new Map<string, { calls: number; us: number }>();
    for (const [, , us, args] of entries) {
      const command = (args[0] ?? '').toUpperCase();
      if (['INFO', 'CONFIG', 'SLOWLOG'].includes(command)) continue;
      const name = command === 'EVALSHA' ? `EVALSHA ${names.get(args[1] ?? '') ?? args[1]}` : command;
      const slot = byName.get(name) ?? { calls: 0, us: 0 };
      slot.calls += 1;
      slot.us += us;
      byName.set(name, slot);
    }
    return [...byName].map(([name, { calls, us }]) => [name, calls, us / 1000] as [string, number, number]).sort((a, b) => b[2] - a[2]);
  } finally {
    client.disconnect();
  }
}

/** The counting proxy (./redis-proxy.ts), in a process of its own. */
class ProxyProcess {
  private constructor(
    private readonly child: ChildProcess,
    readonly port: number,
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  static async start(target: PrivateRedis, names: Map<string, string>): Promise<ProxyProcess> {
    const child = fork(fileURLToPath(new URL('./redis-proxy-process.ts', import.meta.url)), ['127.0.0.1', String(target.port)], {
      execArgv: ['--import', 'tsx'],
      env: { ...process.env, COST_SCRIPT_NAMES: JSON.stringify([...names]) },
    });
    const { port } = await ProxyProcess.reply<{ port: number }>(child, 'port');
    return new ProxyProcess(child, port);
  }

  private static reply<T>(child: ChildProcess, field: string): Promise<T> {
    return replyFrom<T>(child, field, 'the proxy');
  }

  async reset(): Promise<void> {
    const done = ProxyProcess.reply(this.child, 'reset');
    this.child.send('reset');
    await done;
  }

  async connections(): Promise<ConnectionStats[]> {
    const done = ProxyProcess.reply<{ connections: (Omit<ConnectionStats, 'chunksByLead' | 'commandsByName'> & { chunksByLead: [string, number][]; commandsByName: [string, number][] })[] }>(this.child, 'connections');
    this.child.send('stats');
    const { connections } = await done;
    return connections.map((c) => ({ ...c, chunksByLead: new Map(c.chunksByLead), commandsByName: new Map(c.commandsByName) }));
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.send('stop');
    await exited;
  }
}

interface PgCounters {
  xact: number;
}

async function pgCounters(client: pg.Client): Promise<PgCounters> {
  const { rows } = await client.query<{ xact: string }>('SELECT xact_commit + xact_rollback AS xact FROM pg_stat_database WHERE datname = current_database()');
  return { xact: Number(rows[0]?.xact ?? 0) };
}

export interface CostFigures {
  pages: number;
  requests: number;
  expected: number;
  durationMs: number;
  pagesPerS: number;
  redisCommands: number;
  redisCommandsTop: [string, number][];
  /** Top-level command (EVALSHA by script), calls, Redis execution ms — only with BENCH_COST_REDIS_TIMES=1. */
  redisTimes: [string, number, number][];
  clientCommands: number;
  roundTrips: number;
  /** The crawler's own socket writes to Redis (see ./count-writes.ts). */
  clientWrites: number;
  roundTripsByRole: [string, number][];
  roundTripsByLead: [string, number][];
  scriptCalls: [string, number][];
  pgStatements: number;
  pgTransactions: number;
  /** Statement, calls, execution ms (in all). */
  pgTop: [string, number, number][];
  crawlerCpuMs: number;
  /** The crawler's CPU by kind of thread: label, threads, ms. */
  crawlerCpuByThread: [string, number, number][];
  redisCpuMs: number;
  postgresCpuMs: number;
}

/** A connection's role, from its CLIENT SETNAME name (trawl names its connections) and whether it blocks. */
function roleOf(c: ConnectionStats): string {
  if (c.blocking || c.name?.endsWith(':blocking')) return 'BullMQ worker, blocking connection';
  if (c.name?.startsWith('trawl:')) return 'trawl shared connection (frontier, BullMQ queue and worker commands, counters…)';
  return c.name ? `other (${c.name})` : 'other (unnamed)';
}

function sum<K>(entries: Iterable<[K, number]>, into = new Map<K, number>()): Map<K, number> {
  for (const [k, v] of entries) into.set(k, (into.get(k) ?? 0) + v);
  return into;
}

const sorted = <K>(map: Map<K, number>): [K, number][] => [...map].sort((a, b) => b[1] - a[1]);

/**
 * What one fetched page costs Redis and PostgreSQL: `trawl crawl` with default settings on a
 * synthetic web wide enough that politeness does not set the pace, against a private redis-server
 * (behind a counting proxy) and a private PostgreSQL cluster with pg_stat_statements.
 */
export async function costBench(profile: BenchProfile): Promise<void> {
  const hosts = Number(process.env.BENCH_COST_HOSTS ?? 300);
  const pagesPerHost = Number(process.env.BENCH_COST_PAGES ?? 15);
  // A smaller web is for development: its figures are printed, BENCHMARKS.md is left alone.
  const development = process.env.BENCH_COST_HOSTS !== undefined || process.env.BENCH_COST_PAGES !== undefined;
  const pages = profiledWeb('cost', { hosts, pagesPerHost, linksPerPage: 4, crossHostLinks: 2, latencyMs: { min: 1, max: 3 }, seed: 31 }, profile);
  const names = await scriptNames();

  const [redis, postgres] = await Promise.all([PrivateRedis.start(), PrivatePostgres.start({ settings: { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track': 'top' } })]);
  const proxy = await ProxyProcess.start(redis, names);
  const web = await startBenchWeb(pages.web);
  const dir = mkdtempSync(join(tmpdir(), 'trawl-cost-'));
  const client = new pg.Client({ connectionString: postgres.url });
  let figures: CostFigures;
  try {
    await client.connect();
    await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    const namespace = uniqueNamespace('cost');
    // Only what an operator must say for this web (its loopback addresses may be fetched) and
    // where this run's files go; every other setting is trawl's default.
    const env = {
      REDIS_URL: proxy.url,
      DATABASE_URL: postgres.url,
      TRAWL_NAMESPACE: namespace,
      TRAWL_ALLOW_NETWORKS: '127.1.0.0/16',
      TRAWL_CONTENT_DIR: join(dir, 'content'),
      TRAWL_LOG_LEVEL: 'warn',
      COST_COUNT_WRITES_PORT: String(proxy.port),
      COST_COUNT_WRITES_FILE: join(dir, 'writes.json'),
    };
    const redisBefore = commandStats(redis);
    const redisCpuBefore = redisCpuMs(redis);
    const pgBefore = await pgCounters(client);
    await client.query('SELECT pg_stat_statements_reset()');
    const pgCpuBefore = postgresCpuMs(postgres);
    await proxy.reset();
    web.clearLog();
    if (REDIS_TIMES) startCommandLog(redis);

    const countWrites = fileURLToPath(new URL('./count-writes.ts', import.meta.url));
    const samplers: ThreadCpuSampler[] = [];
    const { summary } = await runCrawlProcesses(web.rootUrls(), env, 1, ['--import', 'tsx', '--import', countWrites], [], (proc) => {
      if (proc.child.pid !== undefined) samplers.push(new ThreadCpuSampler(proc.child.pid));
    });
    const byThread = samplers.flatMap((sampler) => cpuByThreadKind(sampler.pid, sampler.stop()));
    const clientWrites = (JSON.parse(readFileSync(join(dir, 'writes.json'), 'utf8')) as { writes: number }).writes;

    const pgCpuAfter = postgresCpuMs(postgres);
    const redisCpuAfter = redisCpuMs(redis);
    const redisAfter = commandStats(redis);
    const redisTimes = REDIS_TIMES ? await readCommandLog(redis, names) : [];
    const pgAfter = await pgCounters(client);
    const { rows: statements } = await client.query<{ query: string; calls: string; ms: number }>(
      "SELECT query, calls, total_exec_time AS ms FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query NOT LIKE '%pg_stat_statements%' ORDER BY total_exec_time DESC",
    );
    await web.idle();

    const expected = web.groundTruth(web.rootUrls(), 'any');
    const analysis = analyzeLog(web.log, { minIntervalMs: 0, expected });
    const pages = web.log.filter((e) => (e.resource === 'page' || e.resource === 'nofollow' || e.resource === 'variant') && e.status >= 200 && e.status < 300).length;
    const redisDelta = new Map([...redisAfter].map(([name, calls]) => [name, calls - (redisBefore.get(name) ?? 0)] as [string, number]).filter(([, n]) => n > 0));
    // The bench's own INFO calls are not the crawler's.
    redisDelta.delete('info');
    const connections = await proxy.connections();
    const byRole = new Map<string, number>();
    for (const c of connections) byRole.set(roleOf(c), (byRole.get(roleOf(c)) ?? 0) + c.chunks);
    const byLead = new Map<string, number>();
    const byCommand = new Map<string, number>();
    for (const c of connections) {
      sum(c.chunksByLead, byLead);
      sum(c.commandsByName, byCommand);
    }
    figures = {
      pages,
      requests: web.log.length,
      expected: analysis.coverage?.expected ?? expected.size,
      durationMs: summary.durationMs,
      pagesPerS: (pages * 1000) / summary.durationMs,
      redisCommands: [...redisDelta.values()].reduce((a, b) => a + b, 0),
      redisCommandsTop: sorted(redisDelta),
      redisTimes,
      clientCommands: connections.reduce((s, c) => s + c.commands, 0),
      roundTrips: connections.reduce((s, c) => s + c.chunks, 0),
      clientWrites,
      roundTripsByRole: sorted(byRole),
      roundTripsByLead: sorted(byLead),
      scriptCalls: sorted(new Map([...byCommand].filter(([name]) => name.startsWith('EVALSHA ')).map(([name, n]) => [name.slice('EVALSHA '.length), n] as [string, number]))),
      pgStatements: statements.reduce((s, r) => s + Number(r.calls), 0),
      pgTransactions: pgAfter.xact - pgBefore.xact,
      pgTop: statements.map((r) => [r.query.replace(/\s+/g, ' ').trim(), Number(r.calls), Number(r.ms)] as [string, number, number]),
      crawlerCpuMs: summary.process.cpuMs,
      crawlerCpuByThread: byThread,
      redisCpuMs: redisCpuAfter - redisCpuBefore,
      postgresCpuMs: pgCpuAfter - pgCpuBefore,
    };
  } finally {
    await client.end().catch(() => undefined);
    await web.stop();
    await proxy.stop();
    await Promise.all([redis.stop(), postgres.stop()]);
    rmSync(dir, { recursive: true, force: true });
  }

  const f = figures;
  const threadsMs = (g: CostFigures) => g.crawlerCpuByThread.reduce((a, [, , ms]) => a + ms, 0);
  const per = (n: number, digits = 2) => fmt(n / f.pages, digits);
  const shorten = (s: string, n = 110) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
  const links =
    pages.web.profile === undefined
      ? '4 links to pages of the same host and 2 to other hosts per page'
      : `${pages.web.profile.links.min}–${pages.web.profile.links.max} links per page, 2 of them to other hosts`;
  const md = `## Cost per page: Redis and PostgreSQL work per fetched page — ${pages.label}

Command: \`${pages.command}\`. ${machine({ 'trawl build': trawlRuntime() })} · Redis ${redisVersion()} · PostgreSQL 15

One \`trawl crawl\` process with **default settings** (only \`TRAWL_ALLOW_NETWORKS\` for the synthetic
web's loopback addresses, and a temporary \`TRAWL_CONTENT_DIR\`) crawls a ${hosts} × ${pagesPerHost} synthetic web
(${links}; pages: ${pages.label}): ${hosts} hosts
keep the default 1 s per-host delay from setting the pace. It runs against a private
\`redis-server\` (AOF everysec) and a private PostgreSQL 15 cluster (with \`pg_stat_statements\`),
so nothing else touches their counters. Pages are counted at the web's server log: HTML pages
served 2xx (robots.txt, sitemaps and error responses aside): **${fmt(f.pages)} pages** (${fmt(f.expected)} expected,
${fmt(f.requests)} requests in all) in ${fmt(f.durationMs / 1000, 1)} s: **${fmt(f.pagesPerS, 1)} pages/s**. Counters are read
just before the process starts and after it exits, so the start-up (migrations, script loads) is in them.

| per fetched page | |
|---|---|
| Redis commands (\`INFO commandstats\` delta, commands run inside Lua included) | ${per(f.redisCommands)} |
| Redis commands sent by the crawler (scripts count 1) | ${per(f.clientCommands)} |
| **Redis round trips** (client → server chunks at the proxy) | **${per(f.roundTrips)}** |
| Redis writes by the crawler (\`socket.write\` calls, counted in the process) | ${per(f.clientWrites)} |
| PostgreSQL statements (\`pg_stat_statements\` calls, top level) | ${per(f.pgStatements)} |
| PostgreSQL transactions (\`pg_stat_database\`) | ${per(f.pgTransactions)} |
| crawler CPU ms (the \`trawl crawl\` process, all threads) | ${per(f.crawlerCpuMs)} |
| Redis CPU ms (\`INFO cpu\` user + sys) | ${per(f.redisCpuMs, 3)} |
| PostgreSQL CPU ms (every process of the cluster, \`/proc/<pid>/stat\`) | ${per(f.postgresCpuMs, 3)} |

${
  f.crawlerCpuByThread.length === 0
    ? ''
    : `Crawler CPU per page by thread: each OS thread's user + system time in \`/proc/<pid>/task/<tid>/stat\`, read every
100 ms while the process runs, to its exit (a thread's last 100 ms before it ends can be missed). The threads add up to
${fmt(threadsMs(f) / 1000, 1)} s; the process's own figure above (${fmt(f.crawlerCpuMs / 1000, 1)} s) is read when it writes its summary, before it
shuts down. trawl names its threads; V8's and libuv's keep the process's name.
${table(['thread', 'threads', 'CPU ms per page', 'share'], f.crawlerCpuByThread.map(([label, n, ms]) => [label, String(n), per(ms, 3), `${fmt((ms / threadsMs(f)) * 100, 1)} %`]))}

`
}Sizing: at these figures one Redis core carries about ${fmt(1000 / (f.redisCpuMs / f.pages))} pages/s and one PostgreSQL
core about ${fmt(1000 / (f.postgresCpuMs / f.pages))} pages/s of this crawl; one crawler core about ${fmt(1000 / (f.crawlerCpuMs / f.pages))}.

Round trips are counted at a loopback TCP proxy (a process of its own) between the crawler and
Redis: each data chunk read from a client socket is one round trip (ioredis writes a command, or
a whole pipeline — auto-pipelining groups the commands of one event-loop tick — in one write).
Caveat: TCP keeps no write boundaries, so two writes that reach the proxy before it reads count
as one, and a write over 64 KiB as several; the proxy also takes some CPU beside the crawl. The
crawler's own count of its writes (a preloaded hook on \`net.Socket#write\`) bounds the first
error: the two agree when the proxy keeps up.

Redis round trips per page by connection:
${table(['connection', 'per page'], f.roundTripsByRole.map(([role, n]) => [role, per(n)]))}

Redis round trips per page by the first command of the write:
${table(['command', 'per page'], f.roundTripsByLead.slice(0, 14).map(([name, n]) => [name, per(n)]))}

Script calls per page (EVALSHA, by script):
${table(['script', 'per page'], f.scriptCalls.slice(0, 16).map(([name, n]) => [name, per(n)]))}

Redis commands per page, inside Lua included (top 16):
${table(['command', 'per page'], f.redisCommandsTop.slice(0, 16).map(([name, n]) => [name, per(n)]))}

PostgreSQL statements by execution time (top 10; \`pg_stat_statements\` total_exec_time, so time in the
server's executor, not the whole CPU of the backends):
${table(['statement', 'calls per page', 'exec ms per page'], f.pgTop.slice(0, 10).map(([q, n, ms]) => [`\`${shorten(q).replace(/\|/g, '\\|').replace(/`/g, "'")}\``, per(n, 3), per(ms, 3)]))}`;
  if (!development) writeSection(pages.sectionId, md);
  console.log(md);
  if (f.redisTimes.length > 0) {
    console.log('\nRedis execution time per page by top-level command (slow log at 0 µs; EVALSHA includes the commands its script runs):');
    console.log(table(['command', 'calls per page', 'µs per page', 'µs per call'], f.redisTimes.slice(0, 24).map(([name, calls, ms]) => [name, per(calls), fmt((ms * 1000) / f.pages, 1), fmt((ms * 1000) / calls, 1)])));
  }
  console.log(`\nCOST_FIGURES ${JSON.stringify({ pages: f.pages, pagesPerS: f.pagesPerS, redisCommands: f.redisCommands / f.pages, clientCommands: f.clientCommands / f.pages, roundTrips: f.roundTrips / f.pages, clientWrites: f.clientWrites / f.pages, pgStatements: f.pgStatements / f.pages, pgTransactions: f.pgTransactions / f.pages, crawlerCpuMs: f.crawlerCpuMs / f.pages, redisCpuMs: f.redisCpuMs / f.pages, postgresCpuMs: f.postgresCpuMs / f.pages, crawlerCpuMsByThread: Object.fromEntries(f.crawlerCpuByThread.map(([label, , ms]) => [label.split(" ")[0], ms / f.pages])) })}`);
}

function redisVersion(): string {
  return execFileSync('redis-server', ['--version'], { encoding: 'utf8' }).match(/v=(\S+)/)?.[1] ?? '?';
}

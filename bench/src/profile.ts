import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dropNamespace, runCrawlProcesses, uniqueNamespace } from '@trawl/cli/testing';
import { createRedis } from '@trawl/redis';
import pg from 'pg';
import { SCENARIOS } from './compare.js';
import { fmt, machine, table, writeSection } from './report.js';
import { type BenchProfile, profiledWeb, startBenchWeb } from './web-profile.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string }; children?: number[] }[];
  samples: number[];
  timeDeltas: number[];
}

/** Busy (non-idle) sampled time of a V8 CPU profile, in µs. */
function busyTime(profile: CpuProfile): number {
  const idle = new Set(profile.nodes.filter((n) => n.callFrame.functionName === '(idle)').map((n) => n.id));
  return profile.samples.reduce((sum, id, i) => (idle.has(id) ? sum : sum + (profile.timeDeltas[i] ?? 0)), 0);
}

/** Inclusive CPU time per workspace package / npm package, from a V8 CPU profile. */
function byPackage(profile: CpuProfile): [string, number][] {
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const totals = new Map<string, number>();
  const packageOf = (url: string): string | null => {
    if (url.includes('node_modules/')) {
      const rest = url.split('node_modules/').pop() as string;
      return `npm:${rest.startsWith('@') ? rest.split('/').slice(0, 2).join('/') : rest.split('/')[0]}`;
    }
    const lib = /\/(libs|apps)\/([^/]+)\//.exec(url);
    return lib ? `${lib[1]}/${lib[2]}` : null;
  };
  for (const [id, t] of self) {
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const pkg = packageOf(byId.get(cur)?.callFrame.url ?? '');
      if (pkg && !seen.has(pkg)) {
        seen.add(pkg);
        totals.set(pkg, (totals.get(pkg) ?? 0) + t);
      }
    }
  }
  return [...totals].sort((a, b) => b[1] - a[1]);
}

async function redisCommandStats(): Promise<Map<string, number>> {
  const redis = createRedis(REDIS_URL);
  const info = await redis.info('commandstats');
  redis.disconnect();
  const out = new Map<string, number>();
  for (const m of info.matchAll(/cmdstat_([^:]+):calls=(\d+)/g)) out.set(m[1] as string, Number(m[2]));
  return out;
}

async function pgStats(): Promise<{ xact: number; inserted: number; updated: number; fetched: number }> {
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  const { rows } = await client.query<{ xact: string; ins: string; upd: string; fet: string }>(
    'SELECT xact_commit + xact_rollback AS xact, tup_inserted AS ins, tup_updated AS upd, tup_fetched AS fet FROM pg_stat_database WHERE datname = current_database()',
  );
  await client.end();
  const r = rows[0] as { xact: string; ins: string; upd: string; fet: string };
  return { xact: Number(r.xact), inserted: Number(r.ins), updated: Number(r.upd), fetched: Number(r.fet) };
}

/** Self time per function (name and file), from a V8 CPU profile, in µs. */
function bySelf(profile: CpuProfile): [string, number][] {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const totals = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    const frame = byId.get(id)?.callFrame;
    if (!frame || frame.functionName === '(idle)') return;
    const file = frame.url.replace(/^.*\/(node_modules|libs|apps)\//, '$1/');
    const name = `${frame.functionName || '(anonymous)'} ${file}`;
    totals.set(name, (totals.get(name) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  return [...totals].sort((a, b) => b[1] - a[1]);
}

/** The thread a `--cpu-prof` file belongs to: `CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile`, thread 0 the main one. */
function threadOf(file: string): number {
  const parts = file.split('.');
  return Number(parts[parts.length - 3] ?? 0);
}

/**
 * Where trawl's time goes on the broad case: one `trawl crawl` process with default settings under
 * --cpu-prof (every thread writes a profile of its own), with Redis commands (INFO commandstats,
 * scripts' inner calls included) and PostgreSQL transactions per page measured around the run.
 * Nothing else may use Redis or PostgreSQL meanwhile.
 */
export async function profileBench(benchProfile: BenchProfile): Promise<void> {
  const base = SCENARIOS.find((s) => s.id === 'broad');
  if (!base) throw new Error('no broad scenario');
  const pages_ = profiledWeb('profile', base.web, benchProfile);
  const web = await startBenchWeb(pages_.web);
  const dir = mkdtempSync(join(tmpdir(), 'trawl-profile-'));
  writeFileSync(join(dir, 'hosts'), web.hostsFile());
  const namespace = uniqueNamespace('profile');
  const env = {
    TRAWL_NAMESPACE: namespace,
    TRAWL_ALLOW_NETWORKS: '127.1.0.0/16',
    TRAWL_HOSTS_FILE: join(dir, 'hosts'),
    TRAWL_CONTENT_DIR: join(dir, 'content'),
    TRAWL_LOG_LEVEL: 'warn',
  };
  const redisBefore = await redisCommandStats();
  const pgBefore = await pgStats();
  const { summary } = await runCrawlProcesses(web.rootUrls(), env, 1, ['--cpu-prof', `--cpu-prof-dir=${dir}`]);
  const redisAfter = await redisCommandStats();
  const pgAfter = await pgStats();
  await web.stop();
  await dropNamespace(namespace);

  const pages = summary.fetched;
  const commands = [...redisAfter]
    .map(([name, calls]) => [name, (calls - (redisBefore.get(name) ?? 0)) / pages] as [string, number])
    .filter(([, perPage]) => perPage > 0.01)
    .sort((a, b) => b[1] - a[1]);
  const threads = readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => ({ thread: threadOf(f), profile: JSON.parse(readFileSync(join(dir, f), 'utf8')) as CpuProfile }))
    .sort((a, b) => busyTime(b.profile) - busyTime(a.profile));
  const threadSections = threads.map(({ thread, profile }) => {
    const busy = busyTime(profile);
    const name = thread === 0 ? 'main thread' : `worker thread ${thread}`;
    return `### ${name}: ${fmt(busy / 1000)} ms busy, ${fmt(busy / 1000 / pages, 2)} ms per page

By package (inclusive: a package's share counts the code it calls; shares overlap):
${table(['package', 'ms per page', 'share'], byPackage(profile).slice(0, 12).map(([n, t]) => [n, fmt(t / 1000 / pages, 3), `${fmt((t / busy) * 100, 1)} %`]))}

Functions by self time:
${table(['function', 'ms per page', 'share'], bySelf(profile).slice(0, 15).map(([n, t]) => [n.replace(/\|/g, '\\|'), fmt(t / 1000 / pages, 3), `${fmt((t / busy) * 100, 1)} %`]))}`;
  });

  const md = `## Profile of trawl on the broad case — ${pages_.label}

Command: \`npm run bench -- profile\`. ${machine()}

One \`trawl crawl\` process with default settings on the broad web (${base.web.hosts} hosts × ${base.web.pagesPerHost} pages), under
\`--cpu-prof\` (one profile per thread): ${fmt(pages)} pages in ${fmt(summary.durationMs / 1000, 2)} s, ${fmt((pages * 1000) / summary.durationMs, 1)} pages/s, ${fmt(summary.process.cpuMs / pages, 2)} CPU ms per page
(the process's utime + stime over its threads, start-up included, divided by pages; profiling adds its own cost).

Redis commands per page (\`INFO commandstats\` delta; calls made inside Lua scripts are counted too):
${table(['command', 'per page'], commands.slice(0, 15).map(([name, n]) => [name, fmt(n, 2)]))}

PostgreSQL per page (\`pg_stat_database\` delta, whole database): ${fmt((pgAfter.xact - pgBefore.xact) / pages, 2)} transactions (each
statement is its own), ${fmt((pgAfter.inserted - pgBefore.inserted) / pages, 2)} rows inserted, ${fmt((pgAfter.updated - pgBefore.updated) / pages, 2)} rows updated.

Busy time per thread (sampled, start-up included):

${threadSections.join('\n\n')}`;
  writeSection(benchProfile === 'tiny' ? 'profile-tiny' : 'profile', md);
  console.log(md);
}

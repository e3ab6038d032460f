import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { frontierKeys } from '@trawl/frontier';
import type { Redis } from '@trawl/redis';
import { dropNamespace as dropNamespaceOn } from '@trawl/runtime/testing';
import { analyzeLog, type RequestLogEntry, type TestWeb } from '@trawl/testweb';

export const REPO = fileURLToPath(new URL('../../../..', import.meta.url));
const MAIN = fileURLToPath(new URL('../main.ts', import.meta.url));
const DIST_MAIN = fileURLToPath(new URL('../../dist/main.js', import.meta.url));

/**
 * Which build `trawl()` runs: the sources through tsx (the default: no build step, what tests
 * need), or with TRAWL_RUNTIME=dist the compiled JavaScript of `npm run build`, what an installed
 * package or an image runs (no TypeScript compiled at start, in the process or its threads).
 */
export function trawlRuntime(env: Record<string, string | undefined> = process.env): 'source' | 'dist' {
  return env.TRAWL_RUNTIME === 'dist' ? 'dist' : 'source';
}

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
export const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export const uniqueNamespace = (label: string) => `t_${label}_${randomUUID().slice(0, 8)}`;

/**
 * What a finished crawl from `seeds` looks like in the synthetic web's request log: coverage,
 * pages fetched more than once, and politeness (requests in flight per host, gaps shorter than
 * `minIntervalMs`). A complete, once-only, polite crawl gives `{ expected, missing: [],
 * unexpected: [], fetchedTwice: [], concurrencyViolations: [], maxPerHost: 1, intervalViolations: [] }`.
 */
export function crawlVerdict(web: TestWeb, seeds: readonly string[], minIntervalMs: number) {
  const expected = web.groundTruth([...seeds], 'any');
  const report = analyzeLog(web.log, { minIntervalMs, expected });
  return {
    expected: expected.size,
    missing: report.coverage?.missing,
    unexpected: report.coverage?.unexpected,
    fetchedTwice: report.duplicates.pages,
    concurrencyViolations: report.concurrency.violations,
    maxPerHost: report.concurrency.maxPerHost,
    intervalViolations: report.intervals.violations,
  };
}

/** `crawlVerdict` of a complete, once-only, polite crawl of `expected` pages. */
/**
 * The most requests in flight at once in a server's request log (high-resolution times; an end
 * and a start at the same instant count the end first): 1 for a server polite crawling never overlapped.
 */
export function maxInFlight(log: readonly RequestLogEntry[]): number {
  const events = log.flatMap((entry) => [
    { at: entry.startHr ?? entry.start, delta: 1 },
    { at: entry.endHr ?? entry.end, delta: -1 },
  ]);
  events.sort((a, b) => a.at - b.at || a.delta - b.delta);
  let inFlight = 0;
  let most = 0;
  for (const event of events) {
    inFlight += event.delta;
    most = Math.max(most, inFlight);
  }
  return most;
}

export const completeAndPolite = (expected: number) => ({ expected, missing: [], unexpected: [], fetchedTwice: [], concurrencyViolations: [], maxPerHost: 1, intervalViolations: [] });

export interface Proc {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Runs the trawl CLI in a child process (as `trawl …` would), for tests and benchmarks: see `trawlRuntime`. */
export function trawl(args: string[], env: Record<string, string>, nodeArgs: string[] = []): Proc {
  const entry = trawlRuntime({ ...process.env, ...env }) === 'dist' ? [DIST_MAIN] : ['--conditions=trawl-source', '--import', 'tsx', MAIN];
  const child = spawn(process.execPath, [...nodeArgs, ...entry, ...args], {
    cwd: REPO,
    env: { ...process.env, REDIS_URL, DATABASE_URL, TRAWL_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, stdout: () => out, stderr: () => err, exited };
}

export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * URLs a crawl in service mode still has to do, over every partition: leased (pages handed to
 * the process or render stage, and jobs deferred for their address, included), queued and
 * spilled. 0 when the crawl is done. Read in one transaction: read apart, a claim (queued to
 * leased) or a page's links pushed just before its lease is acknowledged can fall between two
 * reads, and an unfinished crawl shows as 0.
 */
export async function outstandingUrls(redis: Redis, namespace: string, partitions: number): Promise<number> {
  const transaction = redis.multi();
  for (let p = 0; p < partitions; p += 1) {
    const keys = frontierKeys(namespace, p);
    transaction.zcard(keys.leases).hmget(keys.stats, 'queued', 'spilled');
  }
  const replies = (await transaction.exec()) ?? [];
  let n = 0;
  for (const [error, value] of replies) {
    if (error) throw error;
    for (const count of [value].flat()) n += Number(count ?? 0);
  }
  return n;
}

/**
 * What is left of an unfinished crawl, for a test's failure message: per partition, each live
 * lease (expiry, its URL's data, the attempt that fetched it, the worker holding it) and the
 * process streams' lengths and pending entries, with the render queue's job counts.
 */
export async function describeOutstanding(redis: Redis, namespace: string, partitions: number, limit = 20): Promise<string> {
  const lines: string[] = [];
  for (let p = 0; p < partitions; p += 1) {
    const keys = frontierKeys(namespace, p);
    const leases = await redis.zrange(keys.leases, '0', String(limit - 1), 'WITHSCORES');
    const stats = await redis.hgetall(keys.stats);
    lines.push(`partition ${p}: ${(await redis.zcard(keys.leases))} leases, stats ${JSON.stringify(stats)}`);
    for (let i = 0; i < leases.length; i += 2) {
      const id = leases[i] as string;
      const [data, fetched, holder] = await Promise.all([redis.hget(keys.leaseData, id), redis.hget(keys.fetched, id), redis.hget(keys.holders, id)]);
      lines.push(`  lease ${id} until ${leases[i + 1]}: ${data ?? '(no data)'} fetched=${fetched ?? '-'} holder=${(holder ?? '-').replace('\n', ' ')}`);
    }
    for (const stream of [keys.process, keys.urgent]) {
      const length = await redis.xlen(stream).catch(() => 0);
      const pending = length > 0 ? await redis.xpending(stream, 'process').catch((error: Error) => error.message) : [];
      lines.push(`  ${stream.slice(keys.base.length)}: ${length} entries, pending ${JSON.stringify(pending)}`);
    }
  }
  const render = `${namespace}:{render}:render`;
  const counts = await Promise.all(['wait', 'active', 'delayed', 'failed', 'completed'].map(async (state) => {
    const key = `${render}:${state}`;
    const type = await redis.type(key);
    const n = type === 'list' ? await redis.llen(key) : type === 'zset' ? await redis.zcard(key) : 0;
    return `${state} ${n}`;
  }));
  lines.push(`render queue: ${counts.join(', ')}`);
  for (const id of await redis.zrange(`${render}:failed`, '0', String(limit - 1))) {
    const [reason, made, started, stack] = await redis.hmget(`${render}:${id}`, 'failedReason', 'attemptsMade', 'attemptsStarted', 'stacktrace');
    lines.push(`  failed render job ${id}: ${reason ?? '?'} (attempts made ${made ?? '?'}, started ${started ?? '?'}); stack ${(stack ?? '').slice(0, 3000)}`);
  }
  return lines.join('\n');
}

/** Removes everything a test or benchmark namespace left: its Redis keys and PostgreSQL schema. */
export function dropNamespace(namespace: string, servers = { redisUrl: REDIS_URL, databaseUrl: DATABASE_URL }): Promise<void> {
  return dropNamespaceOn(namespace, servers);
}

/** What each trawl process reports as it exits (the crawl's summary, or a worker's line). */
export interface ProcessReport {
  process: { cpuMs: number; maxRssMb: number };
  fetched: number;
  drained?: boolean;
}

export interface CrawlProcesses {
  crawl: Proc;
  workers: Proc[];
  /** The crawl's --json summary. */
  summary: ProcessReport & { finished: string; durationMs: number; deadLettered: number; fetchLateness?: { count: number; p50S: number; p90S: number; p99S: number } | null };
  /** Every process's report, the crawl's first. */
  reports: ProcessReport[];
}

/**
 * Runs one crawl the way an operator would: `processes - 1` × `trawl worker` (each waited for
 * until it says it has started), then `trawl crawl <seeds> --json`; when the crawl exits, the workers get SIGTERM.
 * Throws, with the process's stderr, if any process fails.
 */
export async function runCrawlProcesses(
  seeds: readonly string[],
  env: Record<string, string>,
  processes = 1,
  nodeArgs: string[] = [],
  /** Each process's own settings (the crawl's first, then each worker's), e.g. TRAWL_WORKER_ROLES. */
  own: readonly Record<string, string>[] = [],
  /** Called once the crawl process is spawned, with the workers already started (a benchmark watching their CPU). */
  onCrawl?: (crawl: Proc, workers: readonly Proc[]) => void,
): Promise<CrawlProcesses> {
  const workers: Proc[] = [];
  // Workers log their lifecycle at info (a handful of lines, none per page): the crawl starts once
  // each has said it is started, as a deployment's long-running workers would be, so no worker
  // still loading its modules competes for the cores with the crawl's first seconds.
  for (let i = 1; i < processes; i += 1) workers.push(trawl(['worker'], { ...env, TRAWL_LOG_LEVEL: 'info', ...own[i] }));
  for (const w of workers) {
    await waitFor(() => w.stderr().includes('"msg":"worker started"') || w.child.exitCode !== null, 60_000, 'a trawl worker to start');
    if (w.child.exitCode !== null) throw new Error(`trawl worker exited ${w.child.exitCode} before it started: ${w.stderr()}`);
  }
  const crawl = trawl(['crawl', ...seeds, '--json'], { ...env, ...own[0] }, nodeArgs);
  onCrawl?.(crawl, workers);
  const { code } = await crawl.exited;
  for (const w of workers) w.child.kill('SIGTERM');
  await Promise.all(workers.map((w) => w.exited));
  if (code !== 0) throw new Error(`trawl crawl exited ${code}: ${crawl.stderr()}`);
  for (const w of workers) {
    const { code: workerCode } = await w.exited;
    if (workerCode !== 0) throw new Error(`trawl worker exited ${workerCode}: ${w.stderr()}`);
  }
  const summary = JSON.parse(crawl.stdout()) as CrawlProcesses['summary'];
  const reports = [summary, ...workers.map((w) => JSON.parse(w.stdout().trim().split('\n').pop() as string) as ProcessReport)];
  return { crawl, workers, summary, reports };
}

/**
 * Only what any crawl of the hostile web must give, every other setting trawl's default: the
 * namespace, the web's own /16 as the allowed private range (its "private" server stays off
 * limits), a content directory of its own and quiet logs.
 */
export function hostileDefaultsEnv(namespace: string, allowCidr: string): Record<string, string> {
  return {
    TRAWL_NAMESPACE: namespace,
    TRAWL_ALLOW_NETWORKS: allowCidr,
    TRAWL_CONTENT_DIR: `.trawl/test-content/${namespace}`,
    TRAWL_LOG_LEVEL: 'warn',
  };
}

/** The settings the hostile-web test and benchmark crawl with (tight timeouts so traps end fast). */
export function hostileCrawlEnv(
  namespace: string,
  allowCidr: string,
  crawler: { attempts: number; fetchDeadlineMs: number },
  delayMs: number,
): Record<string, string> {
  return {
    TRAWL_NAMESPACE: namespace,
    // Only the synthetic web's own range: its "private" server stays off limits.
    TRAWL_ALLOW_NETWORKS: allowCidr,
    TRAWL_SCOPE: 'any',
    TRAWL_MIN_DELAY_MS: String(delayMs),
    TRAWL_CONCURRENCY: '16',
    TRAWL_ATTEMPTS: String(crawler.attempts),
    TRAWL_RETRY_BASE_MS: '300',
    TRAWL_BACKOFF_BASE_MS: '300',
    TRAWL_ROBOTS_RETRY_BASE_MS: '300',
    TRAWL_FETCH_DEADLINE_MS: String(crawler.fetchDeadlineMs),
    TRAWL_FIRST_BYTE_TIMEOUT_MS: '2000',
    TRAWL_IDLE_TIMEOUT_MS: '2000',
    TRAWL_MAX_QUERY_VARIANTS: '40',
    TRAWL_CONTENT_DIR: `.trawl/test-content/${namespace}`,
    TRAWL_LOG_LEVEL: 'warn',
  };
}

export { chaosEnv, CHAOS_HEADERS, type ChaosFault, type ChaosOptions, type ChaosResult, chaosLabel, chaosRow, type DoubleFetch, runChaos, silenceAround, stalls, worstWaitAcross } from './chaos.js';
export { freePort, PrivatePostgres, PrivateRedis, SmallDisk } from './servers.js';
export { CROSS_HOSTS, PLAIN_HOST, SCRIPTED_HOSTS, scriptedWebPages, startCrossScriptedWeb, startScriptedWeb } from './scripted-web.js';

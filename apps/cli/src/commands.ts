import { mkdirSync } from 'node:fs';
import { type Config, ConfigError, loadConfig, redactSecrets, settingsMarkdownTable } from '@trawl/config';
import { schedulerStatus, workerStatus } from '@trawl/dispatch';
import { Freshness } from '@trawl/db';
import { SeedsQueue } from '@trawl/queue';
import { createRedis } from '@trawl/redis';
import { type AdmissionStatus, findServers, openAdmission, redactUrl, Runtime, serveProcessMetrics } from '@trawl/runtime';
import { rebuildFromDatabase, runSchedulerProcess } from '@trawl/scheduler';
import { createLogger, type Logger } from '@trawl/telemetry';
import { runWorkerProcess } from '@trawl/worker';
import { crawlOverrides, readSeedLines, readSeedsFile } from './args.js';
import { type CrawlSummary, runCrawl } from './crawl.js';
import { freshnessTable, progressLine, StatusLine, summaryText, terminalText } from './progress.js';
import { resolveServices, type Services } from './services.js';
import type { TestWebOptions } from '@trawl/testweb';

export interface CliContext {
  env: Record<string, string | undefined>;
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
  /** Resolves when SIGINT/SIGTERM arrives. */
  onSignal(handler: (signal: string) => void): void;
}

const DATA_DIR = '.trawl';

/** CPU time since `since` (excluding start-up: module loading) and the process's peak RSS. */
function resources(since: NodeJS.CpuUsage): { cpuMs: number; maxRssMb: number } {
  const cpu = process.cpuUsage(since);
  return { cpuMs: Math.round((cpu.user + cpu.system) / 1000), maxRssMb: Math.round(process.resourceUsage().maxRSS / 1024) };
}

function config(ctx: CliContext, overrides: Record<string, unknown>, extraEnv: Record<string, string> = {}): Readonly<Config> {
  return loadConfig({ env: { ...extraEnv, ...ctx.env }, overrides });
}

function logger(cfg: Readonly<Config>, role: string, quietOnTty: boolean, ctx: CliContext): Logger {
  // On a terminal the status line is the interface; logs below warn would scroll it away.
  const level = quietOnTty && ctx.stderr.isTTY && !ctx.env.TRAWL_LOG_LEVEL ? 'warn' : cfg.log.level;
  return createLogger({ level, name: role });
}

async function open(cfg: Readonly<Config>, log: Logger, role: string, allowEmbedded: boolean): Promise<{ runtime: Runtime; services: Services }> {
  mkdirSync(DATA_DIR, { recursive: true });
  const services = await resolveServices(cfg, { dataDir: DATA_DIR, logger: log, allowEmbedded });
  try {
    const runtime = await Runtime.open({ config: cfg, redisUrl: services.redisUrl, databaseUrl: services.databaseUrl, logger: log, role });
    return { runtime, services };
  } catch (error) {
    await services.stop();
    throw error;
  }
}

export interface CrawlFlags {
  seedsFile?: string;
  json?: boolean;
  progress?: boolean;
  fresh?: boolean;
  [key: string]: unknown;
}

/** `trawl crawl`: dispatcher and worker in this process, until the crawl is done. */
export async function crawlCommand(ctx: CliContext, urls: string[], flags: CrawlFlags, extraEnv: Record<string, string> = {}): Promise<CrawlSummary> {
  const seeds = [...urls, ...(flags.seedsFile ? readSeedLines(flags.seedsFile) : [])];
  const cfg = config(ctx, crawlOverrides(flags), extraEnv);
  if (seeds.length === 0) throw new ConfigError(['no seeds: give URLs as arguments or --seeds-file <path>']);
  const log = logger(cfg, 'crawl', true, ctx);
  const { runtime, services } = await open(cfg, log, 'crawl', true);
  try {
    // Built before any seed is queued: a proxy the SSRF guard refuses stops the crawl here.
    void runtime.fetcher;
  } catch (error) {
    await runtime.close();
    await services.stop();
    throw error;
  }
  const controller = new AbortController();
  ctx.onSignal((signal) => {
    log.warn({ signal }, 'stopping: draining in-flight work');
    controller.abort();
  });
  const showProgress = flags.progress !== false && !flags.json && ctx.stderr.isTTY;
  const status = new StatusLine(ctx.stderr);
  const cpuAtStart = process.cpuUsage();
  // Prometheus /metrics and /healthz on TRAWL_METRICS_PORT, like a worker's (a taken port only warns).
  const metrics = await serveProcessMetrics(runtime, 'crawl');
  try {
    const summary = await runCrawl(runtime, {
      seeds,
      fresh: flags.fresh === true,
      concurrency: cfg.worker.concurrency,
      signal: controller.signal,
      progressEveryMs: showProgress ? 500 : 5000,
      onProgress: (p) => (showProgress ? status.update(progressLine(p)) : log.info(p, 'progress')),
    });
    status.done();
    ctx.stdout.write(flags.json ? `${JSON.stringify({ ...summary, process: resources(cpuAtStart) }, null, 2)}\n` : `${summaryText(summary)}\n`);
    return summary;
  } finally {
    status.done();
    await metrics.close();
    await runtime.close();
    await services.stop();
  }
}

/** `trawl worker`: consume fetch jobs of a crawl until SIGTERM. */
export async function workerCommand(ctx: CliContext, flags: Record<string, unknown>): Promise<void> {
  const cfg = config(ctx, crawlOverrides(flags));
  const log = logger(cfg, 'worker', false, ctx);
  const stopped = new Promise<void>((resolve) => ctx.onSignal(() => resolve()));
  const cpuAtStart = process.cpuUsage();
  const servers = await findServers(cfg);
  const report = await runWorkerProcess(cfg, { logger: log, ...servers, stopped });
  ctx.stdout.write(`${JSON.stringify({ ...report, process: resources(cpuAtStart) })}\n`);
}

/** `trawl scheduler`: dispatch the partitions this process owns and consume seeds, until SIGTERM. */
export async function schedulerCommand(ctx: CliContext, flags: Record<string, unknown>): Promise<void> {
  const cfg = config(ctx, crawlOverrides(flags));
  const log = logger(cfg, 'scheduler', false, ctx);
  const stopped = new Promise<void>((resolve) => ctx.onSignal(() => resolve()));
  const servers = await findServers(cfg);
  const report = await runSchedulerProcess(cfg, { logger: log, ...servers, stopped });
  ctx.stdout.write(`${JSON.stringify(report)}\n`);
}

/** `trawl dashboard`: bull-board, the REST API, trawl's pages and /metrics, until SIGTERM. */
export async function dashboardCommand(ctx: CliContext, flags: { host?: string; port?: string; namespace?: string }): Promise<void> {
  const cfg = config(ctx, { namespace: flags.namespace, dashboard: { host: flags.host, port: flags.port } });
  const log = logger(cfg, 'dashboard', false, ctx);
  const stopped = new Promise<void>((resolve) => ctx.onSignal(() => resolve()));
  const servers = await findServers(cfg);
  // Loaded here, not with the CLI: fastify, bull-board and the pages cost ~0.25 s of CPU that
  // every other command (a worker, a crawl) would pay at start for nothing.
  const { runDashboardProcess } = await import('@trawl/dashboard');
  const report = await runDashboardProcess(cfg, {
    logger: log,
    ...servers,
    stopped,
    onListening: (url) => ctx.stderr.write(`trawl dashboard: ${url}/ (bull-board ${url}/queues, API ${url}/v1/docs)\n`),
  });
  ctx.stdout.write(`${JSON.stringify(report)}\n`);
}

/** `trawl seed`'s exit status when its job is still waiting because seed admission is paused. */
export const EXIT_SEEDS_WAITING_FOR_ADMISSION = 4;

/** Why a seeds job waits while seed admission is paused, in an operator's words. */
export function admissionPausedMessage(jobId: string, status: AdmissionStatus): string {
  return `seed admission is paused: the frontier holds ${status.queued} queued URLs, at or above TRAWL_FRONTIER_MAX_QUEUED (${status.maxQueued}); seeds job ${jobId} waits in the seeds queue until the crawl drains it below ${status.resumeBelow} (nothing is lost; no need to send it again)`;
}

/**
 * `trawl seed`: add a job to the crawl's `seeds` queue and wait for a scheduler to take it
 * (`--no-wait`: print the job id and return). While seed admission is paused the job is queued
 * all the same — the queue is where seeds wait — and the command says so; if it is still
 * waiting at `--timeout`, it exits with `EXIT_SEEDS_WAITING_FOR_ADMISSION`.
 */
export async function seedCommand(ctx: CliContext, urls: string[], flags: Record<string, unknown>): Promise<void> {
  const seeds = [...urls, ...(typeof flags.seedsFile === 'string' ? readSeedsFile(flags.seedsFile) : [])];
  // --max-depth and --scope describe this job, not the process's configuration.
  const cfg = config(ctx, { namespace: flags.namespace });
  if (seeds.length === 0) throw new ConfigError(['no seeds: give URLs as arguments or --seeds-file <path>']);
  const data: Record<string, unknown> = { urls: seeds };
  if (flags.priority !== undefined) data.priority = Number(flags.priority);
  if (flags.maxDepth !== undefined) data.max_depth = Number(flags.maxDepth);
  if (flags.scope !== undefined) data.scope = flags.scope;
  const servers = await findServers(cfg);
  const redis = createRedis(servers.redisUrl, { name: `trawl:${cfg.namespace}:seed:${process.pid}`, cluster: cfg.redisCluster });
  const queue = new SeedsQueue(redis, cfg.namespace);
  const admission = openAdmission(cfg, redis);
  try {
    const jobId = await queue.add(data).catch((error: Error) => {
      throw new ConfigError([error.message]);
    });
    const before = await admission.check();
    if (before.state === 'paused') ctx.stderr.write(`trawl: ${admissionPausedMessage(jobId, before)}\n`);
    if (flags.wait === false) {
      ctx.stdout.write(`${JSON.stringify({ job: jobId, state: 'queued', admission: before.state })}\n`);
      return;
    }
    const timeoutMs = typeof flags.timeout === 'string' ? Number(flags.timeout) * 1000 : 30_000;
    const outcome = await queue.wait(jobId, timeoutMs);
    if (outcome === null) {
      const after = await admission.check();
      ctx.stdout.write(`${JSON.stringify({ job: jobId, state: 'waiting', admission: after.state })}\n`);
      if (after.state === 'paused') {
        ctx.stderr.write(`trawl: still waiting after ${timeoutMs / 1000} s: ${admissionPausedMessage(jobId, after)}\n`);
        process.exitCode = EXIT_SEEDS_WAITING_FOR_ADMISSION;
        return;
      }
      ctx.stderr.write(`trawl: seeds job ${jobId} is queued, but no scheduler took it within ${timeoutMs / 1000} s: is \`trawl scheduler\` (or \`trawl crawl\`) running for namespace "${cfg.namespace}"?\n`);
      process.exitCode = 3;
      return;
    }
    if (outcome.state === 'failed') throw new ConfigError([`seeds job ${jobId} was refused: ${outcome.reason}`]);
    ctx.stdout.write(`${JSON.stringify({ job: jobId, state: 'done', ...outcome.result })}\n`);
  } finally {
    await queue.close();
    redis.disconnect();
  }
}

/** `trawl status`: the frontier, the queues, the counters and the database of a namespace. */
export async function statusCommand(ctx: CliContext, flags: Record<string, unknown>): Promise<void> {
  const cfg = config(ctx, crawlOverrides(flags));
  const log = logger(cfg, 'status', true, ctx);
  const { runtime, services } = await open(cfg, log, 'status', false);
  try {
    const seedsQueue = new SeedsQueue(runtime.queueRedis, cfg.namespace);
    const [frontier, queues, seeds, counters, db, policy, schedulers, workers, admission] = await Promise.all([
      runtime.frontier.stats(),
      runtime.queues.counts(),
      seedsQueue.counts(),
      runtime.counters.read(),
      runtime.db.counts(),
      runtime.policyStore.load(),
      schedulerStatus(runtime.redis, cfg.namespace, cfg.partitions, runtime.clock),
      workerStatus(runtime.redis, cfg.namespace, runtime.clock),
      runtime.admission.check(),
    ]);
    await seedsQueue.close();
    const bloom = await runtime.seen.bloom.info();
    // Operator pauses (the dashboard's): the whole crawl, and single hosts.
    const paused = await runtime.frontier.paused();
    const { partitions: _p, ...frontierTotals } = frontier;
    ctx.stdout.write(`${JSON.stringify({ namespace: cfg.namespace, frontier: frontierTotals, admission, paused, queues, seeds, schedulers, workers, counters, db, seen: bloom, policy }, null, 2)}\n`);
  } finally {
    await runtime.close();
    await services.stop();
  }
}

/**
 * `trawl frontier rebuild`: restore a crawl whose Redis data was lost from PostgreSQL (the
 * frontier, the seen-set, the policy, the namespace settings). Progress on stderr, the report as
 * JSON on stdout.
 */
export async function frontierRebuildCommand(ctx: CliContext, flags: Record<string, unknown>): Promise<void> {
  const cfg = config(ctx, crawlOverrides(flags));
  const log = logger(cfg, 'rebuild', true, ctx);
  const { runtime, services } = await open(cfg, log, 'rebuild', false);
  let lastLine = 0;
  try {
    const report = await rebuildFromDatabase(
      runtime,
      log,
      {
        batch: typeof flags.batch === 'string' ? Number(flags.batch) : undefined,
        force: flags.force === true,
        onProgress: (p) => {
          if (Date.now() - lastLine < 1000) return;
          lastLine = Date.now();
          ctx.stderr.write(`rebuild: ${p.rows} rows read, ${p.queued} URLs queued, ${p.counted} settled, ${p.alreadyRestored} restored before\n`);
        },
      },
    );
    ctx.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } finally {
    await runtime.close();
    await services.stop();
  }
}

/** `trawl dlq list|retry`: the dead-letter queue (BullMQ's failed sets). */
export async function dlqCommand(ctx: CliContext, action: 'list' | 'retry', ids: string[], flags: Record<string, unknown>): Promise<void> {
  const cfg = config(ctx, crawlOverrides(flags));
  const log = logger(cfg, 'dlq', true, ctx);
  const { runtime, services } = await open(cfg, log, 'dlq', false);
  try {
    if (action === 'list') {
      const limit = typeof flags.limit === 'string' ? Number(flags.limit) : 100;
      const letters = await runtime.queues.deadLetters(limit);
      if (flags.json) ctx.stdout.write(`${JSON.stringify(letters, null, 2)}\n`);
      else {
        for (const l of letters) ctx.stdout.write(`${terminalText(l.id)}\tp${l.partition}\t${l.attempts}×\t${terminalText(l.url ?? '?')}\t${terminalText(l.reason)}\n`);
        ctx.stdout.write(`${letters.length} dead-lettered job(s)${letters.length === limit ? ` (first ${limit})` : ''}\n`);
      }
      return;
    }
    if (ids.length === 0 && flags.all !== true) throw new ConfigError(['dlq retry: give job ids, or --all']);
    const moved = await runtime.queues.retryDeadLetters(flags.all === true ? 'all' : ids);
    ctx.stdout.write(`${moved} job(s) moved back to waiting; they pass the host gate like any job\n`);
  } finally {
    await runtime.close();
    await services.stop();
  }
}

/** `trawl report freshness`: per host, how fresh the crawl's copies are, from PostgreSQL. */
export async function reportFreshnessCommand(ctx: CliContext, flags: Record<string, unknown>): Promise<void> {
  const cfg = config(ctx, { namespace: flags.namespace });
  const log = logger(cfg, 'report', true, ctx);
  const { runtime, services } = await open(cfg, log, 'report', false);
  try {
    const freshness = new Freshness(runtime.db.pool, cfg.namespace);
    const query = { graceMs: Number(flags.graceS ?? 300) * 1000, recentMs: Number(flags.recentS ?? 86_400) * 1000 };
    const report = typeof flags.host === 'string' ? { total: await freshness.host(flags.host, query), hosts: [] } : await freshness.report(query);
    if (flags.json) {
      ctx.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
      return;
    }
    ctx.stdout.write(`${freshnessTable([...report.hosts, report.total])}\n`);
  } finally {
    await runtime.close();
    await services.stop();
  }
}

export interface TestWebFlags {
  hosts: string;
  pages: string;
  links: string;
  cross: string;
  latencyMs: string;
  seed: string;
  port?: string;
  /** `tiny` (2 KB pages at --latency-ms) or `realistic` (libs/testweb's realistic profile: its own sizes, links and latencies). */
  profile?: string;
}

async function testWebOptions(flags: TestWebFlags): Promise<TestWebOptions> {
  const int = (name: string, value: string) => {
    if (!/^\d+$/.test(value)) throw new ConfigError([`--${name}: expected a whole number, got ${JSON.stringify(value)}`]);
    return Number(value);
  };
  const profile = flags.profile ?? 'tiny';
  if (profile !== 'tiny' && profile !== 'realistic') throw new ConfigError([`--profile: expected tiny or realistic, got ${JSON.stringify(profile)}`]);
  const shape = {
    hosts: int('hosts', flags.hosts),
    pagesPerHost: int('pages', flags.pages),
    linksPerPage: int('links', flags.links),
    crossHostLinks: int('cross', flags.cross),
    seed: int('seed', flags.seed),
    port: flags.port === undefined ? 0 : int('port', flags.port),
  };
  if (profile === 'tiny') return { ...shape, latencyMs: int('latency-ms', flags.latencyMs) };
  const { REALISTIC_PROFILE } = await import('@trawl/testweb');
  return { ...shape, profile: REALISTIC_PROFILE };
}

/** `trawl testweb`: serve the synthetic web until SIGTERM. */
export async function testwebCommand(ctx: CliContext, flags: TestWebFlags): Promise<void> {
  const { TestWeb } = await import('@trawl/testweb');
  const web = await TestWeb.start(await testWebOptions(flags));
  ctx.stdout.write(`${JSON.stringify(web.describe(), null, 2)}\n`);
  await new Promise<void>((resolve) => ctx.onSignal(() => resolve()));
  await web.stop();
}

/** `trawl demo`: start the synthetic web here and crawl it — trawl with nothing else to set up. */
export async function demoCommand(ctx: CliContext, flags: TestWebFlags & CrawlFlags): Promise<CrawlSummary> {
  const { TestWeb } = await import('@trawl/testweb');
  const web = await TestWeb.start(await testWebOptions(flags));
  try {
    return await crawlCommand(
      ctx,
      web.rootUrls(),
      { ...flags, fresh: true, namespace: flags.namespace ?? 'demo', minDelayMs: flags.minDelayMs ?? '100' },
      { TRAWL_ALLOW_NETWORKS: '127.0.0.0/8' },
    );
  } finally {
    await web.stop();
  }
}

export function configCommand(ctx: CliContext, flags: { markdown?: boolean }): void {
  if (flags.markdown) {
    ctx.stdout.write(`${settingsMarkdownTable()}\n`);
    return;
  }
  const resolved = loadConfig({ env: ctx.env });
  // Connection strings may carry passwords: never print them.
  const shown = {
    ...redactSecrets(resolved),
    redisUrl: resolved.redisUrl === undefined ? undefined : redactUrl(resolved.redisUrl),
    databaseUrl: resolved.databaseUrl === undefined ? undefined : redactUrl(resolved.databaseUrl),
  };
  ctx.stdout.write(`${JSON.stringify(shown, null, 2)}\n`);
}

import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Database } from '@trawl/db';
import { analyzeLog, type RequestLogEntry, requestKey, TestWeb } from '@trawl/testweb';
import { type Proc, REPO, trawl, uniqueNamespace, waitFor } from './index.js';
import { type PrivatePostgres, type PrivateRedis, SmallDisk } from './servers.js';

/**
 * Fault injection against a whole crawl, as operators run it: `trawl crawl` and a few
 * `trawl worker` processes share one crawl of the synthetic web, on a private Redis and a private
 * PostgreSQL, while a fault strikes — workers SIGKILLed, Redis restarted or wiped, PostgreSQL
 * restarted, the content disk full. The verdict comes from both sides: the synthetic web's request
 * log (what was fetched, how often, politely?) and PostgreSQL (what was recorded as done).
 *
 * Every process sends its own User-Agent (`trawl-chaos/<process>`), so each request in the log
 * says which process made it: a page fetched twice is explained only when its earlier fetch came
 * from a process that then died (SIGKILL, a fatal fault) before it could record the page.
 */
export type ChaosFault = 'none' | 'kill-workers' | 'kill-processors' | 'restart-redis' | 'restart-postgres' | 'wipe-redis' | 'disk-full';

export interface ChaosOptions {
  fault: ChaosFault;
  redis: PrivateRedis;
  postgres: PrivatePostgres;
  hosts: number;
  pages: number;
  /** TRAWL_MIN_DELAY_MS: the politeness delay that makes the crawl take a while. */
  delayMs: number;
  /** `trawl worker` processes beside `trawl crawl`. */
  workers: number;
  /** The fault strikes once this fraction of the pages has been fetched. */
  at?: number;
  /** kill-workers / kill-processors: SIGKILL a random worker (or processor) this often (then start a new one). */
  killEveryMs?: number;
  /** kill-workers / kill-processors: stop killing after this many (default: until the crawl ends). */
  maxKills?: number;
  /** wipe-redis: the schedulers rebuild the crawl themselves (TRAWL_AUTO_REBUILD) instead of `trawl frontier rebuild`. */
  autoRebuild?: boolean;
  /** Keep the default fetch timeouts, leases and job locks (a 60 s fetch deadline) instead of the chaos settings' short ones. */
  defaultTimeouts?: boolean;
  /** Give up after this long. */
  timeoutMs: number;
  /** disk-full: the content disk's size before and after the fix. */
  diskBytes?: { small: number; fixed: number };
  seed?: number;
  /** Settings added to every process's environment (e.g. a frontier capped in Redis). */
  env?: Record<string, string>;
  log?: (line: string) => void;
}

export interface DoubleFetch {
  url: string;
  fetches: { at: number; by: string }[];
  /** Why the page was fetched again, when a process died between its fetch and its record; else null. */
  explained: string | null;
}

export interface ChaosResult {
  fault: ChaosFault;
  /** wipe-redis: the scheduler rebuilt the crawl itself (TRAWL_AUTO_REBUILD). */
  autoRebuild: boolean;
  /** The default fetch timeouts, leases and job locks were kept (not the chaos settings' short ones). */
  defaultTimeouts: boolean;
  expected: number;
  /** Distinct expected pages the web served (2xx) at least once. */
  fetched: number;
  /** Pages fetched more than once, each with its fetches and the explanation. */
  fetchedTwice: DoubleFetch[];
  /** Expected pages never fetched, or not recorded `done` in PostgreSQL. */
  lost: string[];
  notRecorded: string[];
  politenessViolations: number;
  /** A few of them, for the failure message. */
  politenessSample: string[];
  /** robots.txt requests (one per host, and again for every host after Redis lost its cache). */
  robotsFetches: number;
  /** The longest stretch in which no host got a request, between the crawl's first and last request. */
  longestSilenceMs: number;
  /** When that stretch began (epoch ms: the request before it). */
  longestSilenceFrom: number;
  /** wipe-redis: the longest stretch with no request that the wipe caused (see `silenceAround`); else null. */
  wipeSilenceMs: number | null;
  /**
   * The worst wait of a host past its due time: over every host, the longest gap between the end
   * of one of its responses and its next request, less the politeness delay.
   */
  worstPastDueMs: number;
  /**
   * kill and wipe faults: the worst wait past due of a host whose wait spans a kill or the wipe
   * (see `worstWaitAcross`), the one the fault caused; else null.
   */
  faultWaitMs: number | null;
  wallMs: number;
  /** What happened when, relative to the start (kills, restarts, the rebuild, the fatal exit). */
  events: string[];
  /** Processes that died by our hand, with when (ms since the start). */
  deaths: { by: string; at: number; how: string }[];
}

const DEFAULT_DISK = { small: 96 * 1024, fixed: 64 * 1024 * 1024 };

/** Settings that let a crawl recover from a fault in seconds (see docs/operations.md). */
export function chaosEnv(namespace: string, options: Pick<ChaosOptions, 'redis' | 'postgres' | 'delayMs'>, contentDir: string): Record<string, string> {
  return {
    REDIS_URL: options.redis.url,
    DATABASE_URL: options.postgres.url,
    TRAWL_NAMESPACE: namespace,
    TRAWL_ALLOW_NETWORKS: '127.0.0.0/8',
    TRAWL_SCOPE: 'any',
    TRAWL_MIN_DELAY_MS: String(options.delayMs),
    TRAWL_ADAPTIVE_DELAY_FACTOR: '0',
    TRAWL_CONCURRENCY: '16',
    TRAWL_CONTENT_DIR: contentDir,
    // A dead worker's jobs come back within seconds: short job locks, fetch deadlines and leases.
    TRAWL_STALLED_MS: '2000',
    TRAWL_FETCH_DEADLINE_MS: '2000',
    TRAWL_FIRST_BYTE_TIMEOUT_MS: '2000',
    TRAWL_IDLE_TIMEOUT_MS: '2000',
    TRAWL_LEASE_MS: '8000',
    TRAWL_SCHEDULER_LEASE_MS: '1500',
    TRAWL_RETRY_BASE_MS: '300',
    TRAWL_DRAIN_TIMEOUT_MS: '5000',
    // A killed process stage's pages are claimed by another within seconds.
    TRAWL_PROCESS_CLAIM_MS: '2000',
    TRAWL_LOG_LEVEL: 'warn',
  };
}

/** Runs one crawl under one fault and judges it. */
export async function runChaos(options: ChaosOptions): Promise<ChaosResult> {
  const log = options.log ?? (() => undefined);
  const web = await TestWeb.start({ hosts: options.hosts, pagesPerHost: options.pages, linksPerPage: 3, crossHostLinks: 1, latencyMs: { min: 1, max: 10 }, seed: options.seed ?? 5 });
  const namespace = uniqueNamespace(`chaos_${options.fault.replace(/-/g, '_')}`);
  const contentDir = join(REPO, '.trawl', 'test-content', namespace);
  mkdirSync(contentDir, { recursive: true });
  const disk = options.fault === 'disk-full' ? SmallDisk.mount(contentDir, (options.diskBytes ?? DEFAULT_DISK).small) : null;
  const env = { ...chaosEnv(namespace, options, contentDir), ...options.env };
  if (options.autoRebuild) env.TRAWL_AUTO_REBUILD = 'true';
  if (options.defaultTimeouts) for (const key of ['TRAWL_FETCH_DEADLINE_MS', 'TRAWL_FIRST_BYTE_TIMEOUT_MS', 'TRAWL_IDLE_TIMEOUT_MS', 'TRAWL_STALLED_MS', 'TRAWL_LEASE_MS']) delete env[key];
  const seeds = web.rootUrls();
  const expected = web.groundTruth(seeds, 'any');
  const started = Date.now();
  const events: string[] = [];
  const deaths: ChaosResult['deaths'] = [];
  const note = (line: string) => {
    const entry = `${((Date.now() - started) / 1000).toFixed(1)} s ${line}`;
    events.push(entry);
    log(`[chaos ${options.fault}] ${entry}`);
  };

  let recordedAtWipe: Set<string> | null = null;
  let wipedAt = 0;
  let generation = 0;
  // Every process this run started, by its User-Agent (a page fetched twice names who fetched it).
  const spawned: { proc: Proc; ua: string }[] = [];
  const spawn = (ua: string, args: string[], extra: Record<string, string> = {}): { proc: Proc; ua: string } => {
    const started = { proc: trawl(args, { ...env, ...extra, TRAWL_USER_AGENT: ua }), ua };
    spawned.push(started);
    return started;
  };
  const spawnWorker = (slot: number): { proc: Proc; ua: string } => spawn(`trawl-chaos/w${slot}.${(generation += 1)}`, ['worker']);
  // kill-processors: the stages apart. `trawl crawl` and the workers only fetch; two process-only
  // workers record every page, and are the ones killed.
  const split = options.fault === 'kill-processors';
  if (split) env.TRAWL_WORKER_ROLES = 'fetch';
  const workers = Array.from({ length: options.workers }, (_, i) => spawnWorker(i));
  // At info level: the victim is struck only once it has started (a loaded machine takes seconds
  // to start one), so each kill finds it working on pages.
  const spawnProcessor = (slot: number): { proc: Proc; ua: string } => spawn(`trawl-chaos/p${slot}.${(generation += 1)}`, ['worker'], { TRAWL_WORKER_ROLES: 'process', TRAWL_LOG_LEVEL: 'info' });
  const processors = split ? [spawnProcessor(0), spawnProcessor(1)] : [];
  let crawlRun = 0;
  const spawnCrawl = (): { proc: Proc; ua: string } => spawn(`trawl-chaos/crawl.${(crawlRun += 1)}`, ['crawl', ...seeds, '--json']);
  let crawl = spawnCrawl();
  const pagesFetched = () => new Set(web.log.filter((e) => e.status >= 200 && e.status < 300 && e.pageKey !== null && e.pageKey !== '/robots.txt').map((e) => `${e.host}${e.pageKey}`)).size;
  const waitForShare = async (share: number) => {
    while (pagesFetched() < expected.size * share && crawl.proc.child.exitCode === null) await new Promise((r) => setTimeout(r, 50));
  };

  const deadline = started + options.timeoutMs;
  const alive = (p: Proc) => p.child.exitCode === null && p.child.signalCode === null;
  try {
    await waitForShare(options.at ?? 0.3);
    switch (options.fault) {
      case 'none':
        break;
      case 'kill-workers':
      case 'kill-processors': {
        const every = options.killEveryMs ?? 3000;
        const [pool, spawn] = split ? [processors, spawnProcessor] : [workers, spawnWorker];
        for (let kills = 0; alive(crawl.proc) && Date.now() < deadline && kills < (options.maxKills ?? Infinity); kills += 1) {
          const slot = Math.floor(Math.random() * pool.length);
          const victim = pool[slot] as { proc: Proc; ua: string };
          if (split) await waitFor(() => victim.proc.stderr().includes('"msg":"worker started"') || !alive(victim.proc) || !alive(crawl.proc), 60_000, `${victim.ua} to start`);
          victim.proc.child.kill('SIGKILL');
          deaths.push({ by: victim.ua, at: Date.now(), how: 'SIGKILL' });
          note(`SIGKILL ${victim.ua} (${pagesFetched()} pages fetched)`);
          await victim.proc.exited;
          pool[slot] = spawn(slot);
          await Promise.race([crawl.proc.exited, new Promise((r) => setTimeout(r, every))]);
        }
        break;
      }
      case 'restart-redis': {
        note(`restarting Redis (${pagesFetched()} pages fetched)`);
        await options.redis.restart(500);
        note('Redis is back (AOF reloaded)');
        break;
      }
      case 'restart-postgres': {
        note(`restarting PostgreSQL (${pagesFetched()} pages fetched)`);
        await options.postgres.restart(1000);
        note('PostgreSQL is back');
        break;
      }
      case 'wipe-redis': {
        // What PostgreSQL had recorded just before the wipe: a page fetched but not yet recorded
        // then was waiting on a process stream, which goes with Redis (see judge).
        recordedAtWipe = await doneUrls(options.postgres.url, namespace);
        wipedAt = Date.now();
        note(`FLUSHALL at ${wipedAt} (${pagesFetched()} pages fetched)`);
        options.redis.cli('FLUSHALL');
        if (options.autoRebuild) {
          note('no command run: the scheduler rebuilds the crawl itself (TRAWL_AUTO_REBUILD)');
          break;
        }
        const rebuild = trawl(['frontier', 'rebuild'], env);
        const { code } = await rebuild.exited;
        if (code !== 0) throw new Error(`trawl frontier rebuild exited ${code}: ${rebuild.stderr()}`);
        const report = JSON.parse(rebuild.stdout()) as { rows: number; queued: number };
        note(`trawl frontier rebuild: ${report.rows} rows, ${report.queued} URLs queued again (done at ${Date.now()})`);
        break;
      }
      case 'disk-full': {
        // The content disk fills: every process stops with the fault's message, exit 1.
        const { code } = await crawl.proc.exited;
        const stderr = crawl.proc.stderr();
        note(`trawl crawl exited ${code} (${pagesFetched()} pages fetched): ${stderr.trim().split('\n').pop() ?? ''}`);
        if (code !== 1 || !/ENOSPC|no space left/i.test(stderr)) throw new Error(`expected trawl crawl to stop with exit 1 naming the full disk, got ${code}: ${stderr}`);
        deaths.push({ by: crawl.ua, at: Date.now(), how: 'disk full' });
        // A worker that met the fault stops by itself (exit 1, the message); one that had no job
        // left to meet it is stopped by the operator (SIGTERM: it drains and exits).
        for (const w of workers) {
          await Promise.race([w.proc.exited, new Promise((r) => setTimeout(r, 3000))]);
          if (alive(w.proc)) w.proc.child.kill('SIGTERM');
          const { code: workerCode } = await w.proc.exited;
          if (workerCode === 1 && !/ENOSPC|no space left/i.test(w.proc.stderr())) throw new Error(`worker ${w.ua} exited 1 without naming the full disk: ${w.proc.stderr()}`);
          if (workerCode !== 0 && workerCode !== 1) throw new Error(`worker ${w.ua} exited ${workerCode}: ${w.proc.stderr()}`);
          note(`${w.ua} exited ${workerCode}`);
          deaths.push({ by: w.ua, at: Date.now(), how: workerCode === 1 ? 'disk full' : 'stopped after the disk filled' });
        }
        // The operator's fix: more disk. Then the same commands again resume the crawl.
        disk?.grow((options.diskBytes ?? DEFAULT_DISK).fixed);
        note('disk grown; running trawl crawl and the workers again');
        for (let i = 0; i < workers.length; i += 1) workers[i] = spawnWorker(i);
        crawl = spawnCrawl();
        break;
      }
    }
    const remaining = Math.max(1000, deadline - Date.now());
    const finished = await Promise.race([crawl.proc.exited, new Promise<null>((r) => setTimeout(() => r(null), remaining))]);
    if (finished === null) throw new Error(`the crawl did not finish within ${options.timeoutMs} ms (${pagesFetched()}/${expected.size} pages); stderr: ${crawl.proc.stderr().slice(-2000)}`);
    if (finished.code !== 0) throw new Error(`trawl crawl exited ${finished.code}: ${crawl.proc.stderr().slice(-2000)}`);
    const summary = JSON.parse(crawl.proc.stdout()) as { finished: string };
    if (summary.finished !== 'complete') throw new Error(`trawl crawl finished ${summary.finished}`);
    const wallMs = Date.now() - started;
    note(`trawl crawl finished: ${summary.finished}`);
    await web.idle();
    const wipe = recordedAtWipe ? { at: wipedAt, recorded: recordedAtWipe } : null;
    const judged = await judge(web, expected, options, namespace, deaths, wipe);
    // A page fetched twice that no fault explains: what each process said (warnings and errors)
    // is the evidence of how, with the times of the fetches relative to the start.
    if (judged.fetchedTwice.some((d) => d.explained === null)) {
      for (const d of judged.fetchedTwice) note(`fetched twice: ${d.url} at ${d.fetches.map((f) => `+${((f.at - started) / 1000).toFixed(2)} s by ${f.by}`).join(', ')}`);
      for (const p of spawned) note(`${p.ua} said:\n${warnings(p.proc.stderr(), started).join('\n')}`);
    }
    const wipeSilenceMs = wipedAt ? silenceAround(web.log, wipedAt) : null;
    note(`longest silence ${judged.longestSilenceMs} ms from +${((judged.longestSilenceFrom - started) / 1000).toFixed(1)} s${wipedAt ? `; around the wipe (+${((wipedAt - started) / 1000).toFixed(1)} s): ${wipeSilenceMs} ms` : ''}`);
    const faultMoments = [...deaths.filter((d) => d.how === 'SIGKILL').map((d) => d.at), ...(wipedAt ? [wipedAt] : [])];
    const faultWaitMs = faultMoments.length === 0 ? null : Math.max(...faultMoments.map((at) => worstWaitAcross(web.log, at, options.delayMs).waitMs));
    return { fault: options.fault, autoRebuild: options.autoRebuild === true, defaultTimeouts: options.defaultTimeouts === true, ...judged, wipeSilenceMs, faultWaitMs, wallMs, events, deaths: deaths.map((d) => ({ ...d, at: d.at - started })) };
  } finally {
    const procs = [crawl.proc, ...workers.map((w) => w.proc), ...processors.map((w) => w.proc)];
    for (const p of procs) if (alive(p)) p.child.kill('SIGTERM');
    await Promise.all(procs.map((p) => Promise.race([p.exited, new Promise((r) => setTimeout(r, 15_000))])));
    for (const p of procs) if (alive(p)) p.child.kill('SIGKILL');
    await web.stop();
    disk?.unmount();
    rmSync(contentDir, { recursive: true, force: true });
  }
}

/** A process's log lines at warn level and above (its last 40), each stamped relative to `started`. */
function warnings(stderr: string, started: number): string[] {
  const lines: string[] = [];
  for (const line of stderr.split('\n')) {
    try {
      // trawl's logger writes the level's label and an ISO time.
      const entry = JSON.parse(line) as { level?: string; time?: string };
      if (['warn', 'error', 'fatal'].includes(entry.level ?? '')) lines.push(`  +${((Date.parse(entry.time ?? '') - started) / 1000).toFixed(2)} s ${line.slice(0, 600)}`);
    } catch {
      if (line.trim() !== '') lines.push(`  ${line.slice(0, 600)}`);
    }
  }
  return lines.slice(-40);
}

/** How much later than its sender's death the server may log a request that was already on its way. */
const IN_FLIGHT_MS = 1000;

/** The verdict: the web's log for fetches, PostgreSQL for records. */
/** The URLs PostgreSQL has recorded done, as the web's log keys them. */
async function doneUrls(databaseUrl: string, namespace: string): Promise<Set<string>> {
  const db = new Database({ url: databaseUrl, schema: namespace, poolSize: 1 });
  try {
    const { rows } = await db.pool.query<{ url: string }>(`SELECT url FROM "${namespace}".urls WHERE state = 'done'`);
    return new Set(
      rows.map((r) => {
        const u = new URL(r.url);
        return `${u.origin}${requestKey(u.pathname + u.search) ?? u.pathname}`;
      }),
    );
  } finally {
    await db.close();
  }
}

async function judge(
  web: TestWeb,
  expected: Set<string>,
  options: ChaosOptions,
  namespace: string,
  deaths: { by: string; at: number; how: string }[],
  wipe: { at: number; recorded: Set<string> } | null,
) {
  // robots.txt is a cache, not a page: fetched again when Redis loses it (the wipe), by design.
  const analysis = analyzeLog(web.log, { minIntervalMs: options.delayMs, expected, ignorePaths: ['/robots.txt'] });
  const robotsFetches = web.log.filter((e) => e.pageKey === '/robots.txt').length;
  const entriesOf = new Map<string, RequestLogEntry[]>();
  for (const e of web.log) {
    if (e.pageKey === null || e.status < 200 || e.status >= 300) continue;
    const key = `http://${e.host}${e.pageKey}`;
    entriesOf.set(key, [...(entriesOf.get(key) ?? []), e]);
  }
  const fetchedTwice: DoubleFetch[] = analysis.duplicates.pages.map((d) => {
    const url = `http://${d.host}${d.pageKey}`;
    const fetches = (entriesOf.get(url) ?? []).map((e) => ({ at: e.start, by: e.userAgent ?? '?' }));
    // Explained: an earlier fetch's process died after it, before recording it could have
    // happened safely (within a few seconds: the record follows the fetch by milliseconds). The
    // server logs a request when its event loop (this process's) gets to it, which can be after
    // the harness noted a kill it made in between: a request logged up to IN_FLIGHT_MS after its
    // sender's death was sent before it (a dead process sends nothing), so it counts as before.
    const earlier = fetches.slice(0, -1);
    const death = earlier
      .map((f) => deaths.find((x) => x.by === f.by && x.at >= f.at - IN_FLIGHT_MS && x.at - f.at < 10_000))
      .find((x) => x !== undefined);
    if (death) return { url, fetches, explained: `${death.by} fetched it, then died (${death.how}) ${death.at - (earlier.find((f) => f.by === death.by)?.at ?? death.at)} ms later, before its record` };
    // Fetched before a FLUSHALL and not recorded by then: it waited on a process stream (handed
    // off, its body stored), which went with Redis; the rebuild queued its URL again. "Before":
    // sent before the wipe, which the server may log late on a loaded machine. Every request it
    // logs after the wipe and before the crawl falls silent was such a one: after the wipe no job
    // passes the gate (its lease went with Redis) until the rebuild is done.
    const inFlightUntil = wipe === null ? 0 : Math.max(wipe.at + IN_FLIGHT_MS, quietFrom(web.log, wipe.at));
    const beforeWipe = wipe !== null && earlier.some((f) => f.at <= inFlightUntil) && fetches.some((f) => f.at > wipe.at) && !wipe.recorded.has(url);
    return { url, fetches, explained: beforeWipe ? 'fetched before the FLUSHALL and not recorded by then: its process-stream entry went with Redis' : null };
  });
  const done = await doneUrls(options.postgres.url, namespace);
  const db = new Database({ url: options.postgres.url, schema: namespace, poolSize: 1 });
  try {
    await db.dropSchema();
  } finally {
    await db.close();
  }
  const missing = analysis.coverage?.missing ?? [];
  const notRecorded = [...expected].filter((url) => !done.has(url));
  return {
    expected: expected.size,
    fetched: expected.size - missing.length,
    fetchedTwice,
    lost: [...new Set([...missing, ...notRecorded])],
    notRecorded,
    politenessViolations: analysis.concurrency.violations.length + analysis.intervals.violations.length,
    politenessSample: [...analysis.concurrency.violations, ...analysis.intervals.violations].slice(0, 5).map((v) => JSON.stringify(v)),
    robotsFetches,
    ...stalls(web.log, options.delayMs),
  };
}

/** How long the crawl stood still, from the web's log: see `ChaosResult.longestSilenceMs` and `worstPastDueMs`. */
export function stalls(log: readonly RequestLogEntry[], delayMs: number): { longestSilenceMs: number; longestSilenceFrom: number; worstPastDueMs: number } {
  const starts = log.map((e) => e.start).sort((a, b) => a - b);
  let longestSilenceMs = 0;
  let longestSilenceFrom = starts[0] ?? 0;
  for (let i = 1; i < starts.length; i += 1) {
    const gap = (starts[i] as number) - (starts[i - 1] as number);
    if (gap > longestSilenceMs) {
      longestSilenceMs = gap;
      longestSilenceFrom = starts[i - 1] as number;
    }
  }
  const byHost = new Map<string, RequestLogEntry[]>();
  for (const e of log) byHost.set(e.host, [...(byHost.get(e.host) ?? []), e]);
  let worstPastDueMs = 0;
  for (const entries of byHost.values()) {
    entries.sort((a, b) => a.start - b.start);
    for (let i = 1; i < entries.length; i += 1) {
      const previous = entries[i - 1] as RequestLogEntry;
      if (previous.end < 0) continue;
      worstPastDueMs = Math.max(worstPastDueMs, (entries[i] as RequestLogEntry).start - previous.end - delayMs);
    }
  }
  return { longestSilenceMs, longestSilenceFrom, worstPastDueMs };
}

/**
 * The longest stretch with no request that a fault at `at` caused: over consecutive requests,
 * the longest gap that ends after `at` and begins before `at` + `withinMs` (a few requests already
 * under way at the fault may still start just after it, before the crawl stands still).
 */
export function silenceAround(log: readonly RequestLogEntry[], at: number, withinMs = 10_000): number {
  return longestGapAround(log, at, withinMs).ms;
}

/** When the silence a fault at `at` caused began (the last request before it; see `silenceAround`). */
export function quietFrom(log: readonly RequestLogEntry[], at: number, withinMs = 10_000): number {
  return longestGapAround(log, at, withinMs).from;
}

function longestGapAround(log: readonly RequestLogEntry[], at: number, withinMs: number): { ms: number; from: number } {
  const starts = log.map((e) => e.start).sort((a, b) => a - b);
  let longest = { ms: 0, from: at };
  for (let i = 1; i < starts.length; i += 1) {
    const from = starts[i - 1] as number;
    const to = starts[i] as number;
    if (to > at && from < at + withinMs && to - from > longest.ms) longest = { ms: to - from, from };
  }
  return longest;
}

/**
 * Over the hosts whose wait spans a moment (a kill, a wipe): the longest gap from the end of a
 * host's last response before it to the host's next request, less the politeness delay.
 */
export function worstWaitAcross(log: readonly RequestLogEntry[], at: number, delayMs: number): { host: string; waitMs: number } {
  const byHost = new Map<string, RequestLogEntry[]>();
  for (const e of log) {
    const entries = byHost.get(e.host);
    if (entries) entries.push(e);
    else byHost.set(e.host, [e]);
  }
  let worst = { host: '', waitMs: 0 };
  for (const [host, entries] of byHost) {
    entries.sort((a, b) => a.start - b.start);
    const next = entries.findIndex((e) => e.start > at);
    if (next <= 0) continue;
    const previous = entries[next - 1] as RequestLogEntry;
    const waitMs = (entries[next] as RequestLogEntry).start - Math.max(previous.end, previous.start) - delayMs;
    if (waitMs > worst.waitMs) worst = { host, waitMs };
  }
  return worst;
}

/** A case's name in the chaos table: the fault, and how it was run when not the plain way. */
export function chaosLabel(r: Pick<ChaosResult, 'fault' | 'autoRebuild' | 'defaultTimeouts' | 'deaths'>): string {
  const kills = r.fault === 'kill-workers' || r.fault === 'kill-processors' ? r.deaths.length : null;
  const how = [kills === null ? null : `${kills} ${kills === 1 ? 'kill' : 'kills'}`, r.autoRebuild ? 'auto rebuild' : null, r.defaultTimeouts ? 'default timeouts' : null].filter(Boolean);
  return how.length > 0 ? `${r.fault} (${how.join(', ')})` : r.fault;
}

/** One Markdown table row per case: pages expected, fetched, fetched twice (explained), lost, wall time. */
export function chaosRow(r: ChaosResult): (string | number)[] {
  const explained = r.fetchedTwice.filter((d) => d.explained !== null).length;
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  return [chaosLabel(r), r.expected, r.fetched, `${r.fetchedTwice.length} (${explained} explained)`, r.lost.length, r.politenessViolations, seconds(r.wallMs), seconds(r.longestSilenceMs), seconds(r.worstPastDueMs), r.faultWaitMs === null ? '–' : seconds(r.faultWaitMs)];
}

export const CHAOS_HEADERS = ['fault', 'pages expected', 'fetched', 'fetched twice', 'lost', 'politeness violations', 'wall time', 'longest silence', 'worst wait past due', 'worst wait past due across the fault'];

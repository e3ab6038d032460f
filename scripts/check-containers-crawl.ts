// The crawl of scripts/check-containers.sh, judged from the server's side: a synthetic web on
// loopback, seeded through the dashboard container's REST API, crawled by the worker containers,
// with one worker stopped (`podman stop`: SIGTERM, it must drain and exit 0) and another killed
// (`podman kill`: SIGKILL, its URLs must come back) mid-crawl. Prints a JSON report on stdout;
// exits 1 when the crawl is not complete, fetched a page twice without a killed worker to explain
// it, was impolite, or a stopped worker did not exit 0.
//
//   node --conditions=trawl-source --import tsx scripts/check-containers-crawl.ts
//
// Settings (environment): CHECK_DASHBOARD_URL, CHECK_TOKEN, CHECK_DELAY_MS (the containers'
// TRAWL_MIN_DELAY_MS), CHECK_WORKERS (the worker containers' names, comma-separated: the busiest
// is stopped, the busiest of the others killed), CHECK_PROCESSORS (the process-only containers'
// names, comma-separated, if any: they must never fetch), CHECK_HOSTS and CHECK_PAGES
// (the web's size), CHECK_TIMEOUT_S; DATABASE_URL and TRAWL_NAMESPACE to read what was recorded.
// Each container sends User-Agent `trawl-check/<container>`, so the log says who fetched what.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Database } from '@trawl/db';
import { analyzeLog, requestKey, TestWeb } from '@trawl/testweb';

const run = promisify(execFile);
const env = (name: string, fallback?: string): string => {
  const value = process.env[name] ?? fallback;
  if (value === undefined) throw new Error(`${name} is not set`);
  return value;
};

const dashboard = env('CHECK_DASHBOARD_URL');
const token = env('CHECK_TOKEN');
const delayMs = Number(env('CHECK_DELAY_MS', '500'));
const workers = env('CHECK_WORKERS').split(',');
const processors = env('CHECK_PROCESSORS', '').split(',').filter(Boolean);
const timeoutMs = Number(env('CHECK_TIMEOUT_S', '300')) * 1000;
const namespace = env('TRAWL_NAMESPACE');
const databaseUrl = env('DATABASE_URL');
const say = (line: string) => process.stderr.write(`[containers] ${line}\n`);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function api<T>(path: string, init: RequestInit = {}): Promise<T> {
  const response = await fetch(`${dashboard}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...init.headers },
    signal: AbortSignal.timeout(10_000),
  });
  const body = await response.text();
  if (!response.ok) throw new Error(`${init.method ?? 'GET'} ${path}: ${response.status} ${body}`);
  return JSON.parse(body) as T;
}

interface Stats {
  frontier: { queued: number; leased: number };
  queues: { name: string; waiting: number; active: number; delayed: number }[];
}

const podman = async (...args: string[]) => (await run('podman', args, { encoding: 'utf8' })).stdout.trim();

async function main(): Promise<number> {
  const web = await TestWeb.start({
    hosts: Number(env('CHECK_HOSTS', '20')),
    pagesPerHost: Number(env('CHECK_PAGES', '30')),
    linksPerPage: 3,
    crossHostLinks: 1,
    latencyMs: { min: 1, max: 10 },
    seed: 25,
  });
  const seeds = web.rootUrls();
  const expected = web.groundTruth(seeds, 'any');
  const started = Date.now();
  const deaths: { by: string; at: number }[] = [];
  const pagesFetched = () => new Set(web.log.filter((e) => e.status >= 200 && e.status < 300 && e.pageKey !== null && e.pageKey !== '/robots.txt').map((e) => `${e.host}${e.pageKey}`)).size;
  const waitFor = async (what: string, ok: () => boolean | Promise<boolean>) => {
    while (!(await ok())) {
      if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what} (${pagesFetched()}/${expected.size} pages fetched)`);
      await sleep(200);
    }
  };
  try {
    const seeded = await api<{ enqueued: number }>('/v1/crawl/seeds', { method: 'POST', body: JSON.stringify({ urls: seeds, scope: 'any' }) });
    say(`seeded ${seeds.length} hosts through ${dashboard}/v1/crawl/seeds (${seeded.enqueued} enqueued); ${expected.size} pages expected`);

    // The worker with the most requests so far: the one with work in flight to drain or lose.
    const busiest = (among: string[]) => {
      const count = (name: string) => web.log.filter((e) => e.userAgent === `trawl-check/${name}`).length;
      return [...among].sort((a, b) => count(b) - count(a))[0] as string;
    };
    // SIGTERM mid-crawl: the worker stops taking jobs, finishes those in flight, exits 0.
    await waitFor('a quarter of the pages', () => pagesFetched() >= expected.size * 0.25);
    const stopName = busiest(workers);
    const stopAt = Date.now();
    await podman('stop', '--time', '60', stopName);
    const drainMs = Date.now() - stopAt;
    const stopExit = Number(await podman('inspect', '--format', '{{.State.ExitCode}}', stopName));
    say(`podman stop ${stopName}: exited ${stopExit} after ${drainMs} ms (${pagesFetched()} pages fetched)`);

    // SIGKILL mid-crawl: whatever it held comes back through its job locks and leases.
    await waitFor('half of the pages', () => pagesFetched() >= expected.size * 0.5);
    const killName = busiest(workers.filter((w) => w !== stopName));
    deaths.push({ by: `trawl-check/${killName}`, at: Date.now() });
    await podman('kill', killName);
    say(`podman kill ${killName} (${pagesFetched()} pages fetched)`);

    // Idle: nothing queued or leased in the frontier, no fetch or seeds job left (the sweeps queue
    // always holds its next repeatable job).
    let last: Stats | null = null;
    await waitFor('every page and an idle crawl', async () => {
      if (pagesFetched() < expected.size) return false;
      last = await api<Stats>('/v1/crawl/stats');
      return last.frontier.queued === 0 && last.frontier.leased === 0 && last.queues.filter((q) => q.name === 'seeds' || q.name.startsWith('fetch-')).every((q) => q.waiting + q.active + q.delayed === 0);
    }).catch((error: Error) => {
      throw new Error(`${error.message}; last stats: ${JSON.stringify(last && { frontier: last.frontier, queues: last.queues })}`);
    });
    const durationMs = Date.now() - started;
    await web.idle();

    const analysis = analyzeLog(web.log, { minIntervalMs: delayMs, expected, ignorePaths: ['/robots.txt'] });
    // A page fetched twice is explained only when an earlier fetch came from the killed worker
    // shortly before it died: it fetched the page and died before recording it.
    const duplicates = analysis.duplicates.pages.map((d) => {
      const fetches = web.log.filter((e) => e.host === d.host && e.pageKey === d.pageKey && e.status >= 200 && e.status < 300);
      const explained = fetches.slice(0, -1).some((f) => deaths.some((x) => x.by === f.userAgent && x.at >= f.start - 1000 && x.at - f.start < 10_000));
      return { url: `http://${d.host}${d.pageKey}`, by: fetches.map((f) => f.userAgent), explained };
    });
    const db = new Database({ url: databaseUrl, schema: namespace, poolSize: 1 });
    let done: Set<string>;
    try {
      const { rows } = await db.pool.query<{ url: string }>(`SELECT url FROM "${namespace}".urls WHERE state = 'done'`);
      done = new Set(rows.map((r) => {
        const u = new URL(r.url);
        return `${u.origin}${requestKey(u.pathname + u.search) ?? u.pathname}`;
      }));
    } finally {
      await db.close();
    }
    const byContainer: Record<string, number> = {};
    for (const e of web.log) byContainer[e.userAgent ?? '?'] = (byContainer[e.userAgent ?? '?'] ?? 0) + 1;
    const report = {
      pagesExpected: expected.size,
      pagesFetched: expected.size - (analysis.coverage?.missingCount ?? 0),
      notRecordedDone: [...expected].filter((url) => !done.has(url)).length,
      requests: web.log.length,
      fetchedTwice: duplicates.length,
      fetchedTwiceUnexplained: duplicates.filter((d) => !d.explained).length,
      duplicates: duplicates.slice(0, 10),
      concurrencyViolations: analysis.concurrency.violationCount,
      intervalViolations: analysis.intervals.violationCount,
      minIntervalMs: delayMs,
      durationS: Number((durationMs / 1000).toFixed(1)),
      stopped: { container: stopName, exitCode: stopExit, drainMs, requestsBefore: byContainer[`trawl-check/${stopName}`] ?? 0 },
      killed: { container: killName },
      requestsByProcessors: processors.reduce((sum, name) => sum + (byContainer[`trawl-check/${name}`] ?? 0), 0),
      requestsByContainer: byContainer,
    };
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    const problems = [
      report.pagesFetched < report.pagesExpected && `${report.pagesExpected - report.pagesFetched} pages never fetched`,
      report.notRecordedDone > 0 && `${report.notRecordedDone} pages not recorded done in PostgreSQL`,
      report.fetchedTwiceUnexplained > 0 && `${report.fetchedTwiceUnexplained} pages fetched twice without a killed worker to explain it`,
      report.concurrencyViolations > 0 && `${report.concurrencyViolations} times more than one request in flight to a host`,
      report.intervalViolations > 0 && `${report.intervalViolations} intervals under ${delayMs} ms`,
      stopExit !== 0 && `${stopName} exited ${stopExit} on SIGTERM, not 0`,
      report.stopped.requestsBefore === 0 && `${stopName} had fetched nothing when stopped: its drain was not exercised`,
      report.requestsByProcessors > 0 && `the process-only containers made ${report.requestsByProcessors} requests: they must never fetch`,
    ].filter((p): p is string => typeof p === 'string');
    for (const p of problems) say(`FAIL: ${p}`);
    return problems.length === 0 ? 0 : 1;
  } finally {
    await web.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (error: Error) => {
    say(`FAIL: ${error.message}`);
    process.exit(1);
  },
);

import { mkdtempSync, renameSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { PrivatePostgres, PrivateRedis } from '@trawl/cli/testing';
import { loadConfig } from '@trawl/config';
import { Runtime } from '@trawl/runtime';
import { loadSeenSnapshot, rebuildFromDatabase, takeSeenSnapshot } from '@trawl/scheduler';
import { silentLogger } from '@trawl/telemetry';
import { fmt, machine, median, table, writeSection } from './report.js';

/** URLs in PostgreSQL (BENCH_SNAPSHOT_URLS); the crawl then records 1 % more after the snapshot. */
const URLS = Number(process.env.BENCH_SNAPSHOT_URLS ?? 1_000_000);
const LATER = Math.max(1, Math.round(URLS / 100));
const HOSTS = Math.max(1, Math.round(URLS / 100));
/** Stops the benchmark, naming the step, when one step takes longer than this (a bounded run). */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const STEP_LIMIT_MS = Number(process.env.BENCH_SNAPSHOT_STEP_LIMIT_S ?? 900) * 1000;

async function bounded<T>(what: string, run: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const start = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${STEP_LIMIT_MS / 1000} s (BENCH_SNAPSHOT_STEP_LIMIT_S)`)), STEP_LIMIT_MS);
  });
  try {
    const value = await Promise.race([run(), limit]);
    const ms = performance.now() - start;
    console.log(`${what}: ${fmt(ms / 1000, 1)} s`);
    return { value, ms };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `urls` rows `from`..`to` (1-based), as a crawl leaves them: 70 % done, 25 % queued, 5 % skipped,
 * on HOSTS hosts; the fingerprint is the first 16 bytes of the URL's sha256. Written by SQL, not
 * by discovery: filling PostgreSQL is not what is measured.
 */
async function insertUrls(runtime: Runtime, from: number, to: number): Promise<void> {
  const schema = runtime.config.namespace;
  for (let start = from; start <= to; start += 100_000) {
    const end = Math.min(to, start + 99_999);
    await runtime.db.pool.query(
      `INSERT INTO "${schema}".urls (url_hash, url, host, depth, state)
       SELECT substring(sha256(convert_to(u, 'UTF8')) from 1 for 16), u, h, 1,
              CASE WHEN i % 20 = 0 THEN 'skipped' WHEN i % 4 = 1 THEN 'queued' ELSE 'done' END
       FROM (SELECT i, 'www.site-' || (i % $3) || '.example.com' AS h FROM generate_series($1::int, $2::int) AS i) AS g,
            LATERAL (SELECT 'https://' || h || '/articles/2026/11/a-fairly-typical-slug-' || i AS u) AS x
       ORDER BY i`,
      [start, end, HOSTS],
    );
  }
}

/** The fingerprints of rows `from`..`to` into the filter, as discovery adds them before the insert. */
async function addToFilter(runtime: Runtime, from: number, to: number): Promise<void> {
  const { rows } = await runtime.db.pool.query<{ url_hash: Buffer }>(
    `SELECT url_hash FROM "${runtime.config.namespace}".urls WHERE id BETWEEN $1 AND $2`,
    [from, to],
  );
  for (let i = 0; i < rows.length; i += 1000) await runtime.seen.bloom.addIfNew(rows.slice(i, i + 1000).map((r) => r.url_hash));
}

/**
 * Rebuild time with and without a seen-set snapshot: a private Redis (the Lua bitmap filter, as on
 * a server without RedisBloom) and a private PostgreSQL holding URLS URLs. Redis loses the crawl
 * (FLUSHALL) and `rebuildFromDatabase` (what `trawl frontier rebuild` and TRAWL_AUTO_REBUILD run)
 * restores it, BENCH_ROUNDS times each way: from a snapshot taken before 1 % more URLs were
 * recorded, and with no snapshot.
 */
export async function seenSnapshotBench(): Promise<void> {
  const redis = await PrivateRedis.start();
  const postgres = await PrivatePostgres.start();
  const contentDir = mkdtempSync(join(tmpdir(), 'trawl-bench-snapshot-'));
  const config = loadConfig({ env: { TRAWL_NAMESPACE: 'bench_seensnap', TRAWL_SEEN_BACKEND: 'lua', TRAWL_SEEN_CAPACITY: String(URLS * 2), TRAWL_CONTENT_DIR: contentDir } });
  const runtime = await Runtime.open({ config, redisUrl: redis.url, databaseUrl: postgres.url, logger: silentLogger, role: 'rebuild' });
  const wipe = async (): Promise<void> => void (await runtime.redis.flushall());
  try {
    const version = /redis_version:(\S+)/.exec(await runtime.redis.info('server'))?.[1] ?? '?';
    const load = loadavg()[0] ?? 0;
    await runtime.intact();
    await bounded(`insert ${fmt(URLS)} URLs`, () => insertUrls(runtime, 1, URLS));
    await runtime.db.pool.query(`ANALYZE "${config.namespace}".urls`);
    const fill = await bounded('fill the filter', () => addToFilter(runtime, 1, URLS));
    const snapshot = await bounded('take a snapshot', () => takeSeenSnapshot(runtime));
    if ('skipped' in snapshot.value) throw new Error(`snapshot skipped: ${String(snapshot.value.skipped)}`);
    const stored = Number(snapshot.value.storedBytes);
    const filterBytes = (await runtime.seen.bloom.info()).bytes;
    // The crawl goes on: 1 % more URLs, each added to the filter before its row, as discovery does.
    await insertUrls(runtime, URLS + 1, URLS + LATER);
    await addToFilter(runtime, URLS + 1, URLS + LATER);

    // Rounds in alternating order (with, without; then without, with; …), so load from other work
    // on the machine falls on both alike; the snapshots are moved aside for a rebuild without one.
    const snapshotsDir = join(contentDir, 'seen-snapshots');
    const rows: string[][] = [];
    const times = { with: [] as number[], without: [] as number[] };
    const handedBack = { with: [] as number[], without: [] as number[] };
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const kind of round % 2 === 0 ? (['with', 'without'] as const) : (['without', 'with'] as const)) {
        await wipe();
        if (kind === 'without') renameSync(snapshotsDir, `${snapshotsDir}.aside`);
        try {
          const rebuilt = await bounded(`round ${round + 1}: rebuild ${kind} the snapshot`, () => rebuildFromDatabase(runtime, silentLogger));
          const expected = kind === 'with' ? LATER : URLS + LATER;
          if (rebuilt.value.seen !== expected || rebuilt.value.rows !== URLS + LATER) throw new Error(`the rebuild ${kind} a snapshot added ${rebuilt.value.seen} URLs of ${rebuilt.value.rows} rows`);
          times[kind].push(rebuilt.ms);
          handedBack[kind].push(rebuilt.value.handedBackMs);
          rows.push([String(round + 1), `${kind} the snapshot`, fmt(rebuilt.value.rows), fmt(rebuilt.value.seen), fmt(rebuilt.value.handedBackMs / 1000, 2), fmt(rebuilt.ms / 1000, 1)]);
        } finally {
          if (kind === 'without') renameSync(`${snapshotsDir}.aside`, snapshotsDir);
        }
      }
    }
    // The load alone, into the rebuilt filter (it is replaced whole, as after a loss).
    const loadOnly = await bounded('load the snapshot alone', () => loadSeenSnapshot(runtime));
    if ('fallback' in loadOnly.value) throw new Error(`the snapshot did not load: ${loadOnly.value.fallback}`);

    const md = `## Rebuild with and without a seen-set snapshot: ${fmt(URLS + LATER)} URLs

Command: \`BENCH_SNAPSHOT_URLS=${URLS} npm run bench -- seen-snapshot\`. ${machine({ redis: version, 'load average at start': fmt(load, 1) })}

A private \`redis-server\` (the Lua bitmap filter: no RedisBloom module; \`TRAWL_SEEN_CAPACITY\` ${fmt(URLS * 2)},
error rate ${config.seen.errorRate}, ${config.seen.shards} shard) and a private PostgreSQL holding ${fmt(URLS)} URLs on ${fmt(HOSTS)} hosts
(70 % done, 25 % queued, 5 % skipped). The filter is filled, a snapshot taken to the local
content directory (${fmt(snapshot.ms / 1000, 2)} s; ${fmt(filterBytes / 2 ** 20, 2)} MiB of filter stored as ${fmt(stored / 2 ** 20, 2)} MiB of gzip), then
${fmt(LATER)} more URLs are recorded (1 %), Redis loses everything (\`FLUSHALL\`) and \`rebuildFromDatabase\` (what
\`trawl frontier rebuild\` and \`TRAWL_AUTO_REBUILD\` run, 1,000 rows per page) restores the crawl: loading
the snapshot and adding only the URLs above its id, and with no snapshot, ${ROUNDS} times each in alternating order.

${table(['round', 'rebuild', 'rows read (frontier)', 'URLs added to the filter', 'crawl handed back after s', 'seconds'], rows)}

Median: **${fmt(median(times.with) / 1000, 1)} s with the snapshot, ${fmt(median(times.without) / 1000, 1)} s without**. The crawl does not wait for
either: the rebuild hands it back (policy, pauses, live marks, settings) before its scan, after a median
${fmt(median(handedBack.with) / 1000, 2)} s with the snapshot (loading it comes first) and ${fmt(median(handedBack.without) / 1000, 2)} s without, and each host is
crawled as soon as the scan has restored its URLs. The seconds include the rebuild's wait for the
crawl's workers to say they are quiet (one heartbeat TTL; none run here); the hand-back counts
from the end of that wait. The seen-set's part alone: loading
the snapshot (list, read and check every part, write the restore keys, swap) took ${fmt(loadOnly.ms / 1000, 2)} s, where adding
the ${fmt(URLS)} URLs to an empty filter from one client, 1,000 per call, took ${fmt(fill.ms / 1000, 1)} s (in a rebuild that work
overlaps the frontier's, one page of rows at a time, so it saves less than that).

The machine is shared with other work (the load average above counts it): the rebuilds of one run
compare with each other better than with other sections.
Both read every row: the frontier (queued URLs, and every host's URL budget) is rebuilt from
PostgreSQL either way. What the snapshot saves is the seen-set's part, one filter update per URL.`;
    writeSection('seen-snapshot', md);
    console.log(md);
  } finally {
    await runtime.close();
    await postgres.stop();
    await redis.stop();
    rmSync(contentDir, { recursive: true, force: true });
  }
}

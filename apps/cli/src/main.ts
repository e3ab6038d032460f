#!/usr/bin/env node
import { ConfigError } from '@trawl/config';
import { isTrawlError } from '@trawl/core';
import { Command, InvalidArgumentError } from 'commander';
import {
  type CliContext,
  configCommand,
  crawlCommand,
  dashboardCommand,
  demoCommand,
  dlqCommand,
  frontierRebuildCommand,
  reportFreshnessCommand,
  schedulerCommand,
  seedCommand,
  statusCommand,
  testwebCommand,
  workerCommand,
} from './commands.js';

const signals: ((signal: string) => void)[] = [];
let signalled = 0;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    signalled += 1;
    if (signalled > 1) {
      process.stderr.write(`\n${signal} again: exiting without draining\n`);
      process.exit(130);
    }
    for (const handler of signals.splice(0)) handler(signal);
  });
}

const ctx: CliContext = {
  env: process.env,
  stdout: process.stdout,
  stderr: process.stderr,
  onSignal: (handler) => {
    signals.push(handler);
  },
};

const wholeNumber = (value: string): string => {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError('expected a whole number');
  return value;
};

const program = new Command('trawl')
  .description('A polite, distributed web crawler.')
  .showHelpAfterError()
  .configureHelp({ sortSubcommands: false });

const withCrawlOptions = (command: Command): Command =>
  command
    .option('--namespace <name>', 'crawl namespace: Redis key prefix and PostgreSQL schema (TRAWL_NAMESPACE)')
    .option('--partitions <n>', 'frontier partitions (TRAWL_PARTITIONS)', wholeNumber)
    .option('--concurrency <n>', 'fetch jobs this process runs at once (TRAWL_CONCURRENCY)', wholeNumber);

withCrawlOptions(
  program
    .command('crawl')
    .description('crawl from seed URLs: dispatcher and worker in this process, until done')
    .argument('[urls...]', 'seed URLs')
    .option('--seeds-file <path>', 'file with one seed URL per line')
    .option('--max-pages <n>', 'stop after this many pages (TRAWL_MAX_PAGES)', wholeNumber)
    .option('--max-depth <n>', 'follow links at most this deep from a seed (TRAWL_MAX_DEPTH)', wholeNumber)
    .option('--scope <scope>', 'host | domain | any: which links to follow (TRAWL_SCOPE, default domain)')
    .option('--min-delay-ms <ms>', 'per-host politeness delay (TRAWL_MIN_DELAY_MS, default 1000)', wholeNumber)
    .option('--fresh', 'wipe the namespace (frontier, seen-set, database tables) first')
    .option('--json', 'print the final summary as JSON')
    .option('--no-progress', 'no live status line'),
).action(async (urls: string[], flags) => {
  await crawlCommand(ctx, urls, flags);
});

withCrawlOptions(program.command('worker').description('fetch worker: joins the crawl of its namespace until SIGTERM')).action(async (flags) => {
  await workerCommand(ctx, flags);
});

withCrawlOptions(
  program.command('scheduler').description('scheduler: dispatches the partitions it owns, consumes seeds, until SIGTERM (run one or more)'),
).action(async (flags) => {
  await schedulerCommand(ctx, flags);
});

program
  .command('dashboard')
  .description('the operator surface: bull-board (/queues), the REST API (/v1), pages and /metrics, until SIGTERM')
  .option('--host <addr>', 'address to listen on (TRAWL_DASHBOARD_HOST, default 127.0.0.1)')
  .option('--port <n>', 'port to listen on (TRAWL_DASHBOARD_PORT, default 8930)', wholeNumber)
  .option('--namespace <name>', 'crawl namespace (TRAWL_NAMESPACE)')
  .action(async (flags) => {
    await dashboardCommand(ctx, flags);
  });

program
  .command('seed')
  .description('add seed URLs to a crawl through its `seeds` queue (a scheduler takes them)')
  .argument('[urls...]', 'seed URLs')
  .option('--seeds-file <path>', 'file with one seed URL per line')
  .option('--priority <p>', 'priority of these seeds, 0..1 (default 1)')
  .option('--max-depth <n>', 'follow links at most this deep from these seeds', wholeNumber)
  .option('--scope <scope>', 'host | domain | any: how these seeds widen the crawl\'s scope')
  .option('--no-wait', 'print the job id and return without waiting for a scheduler')
  .option('--timeout <s>', 'seconds to wait for a scheduler to take the job', wholeNumber, '30')
  .option('--namespace <name>', 'crawl namespace (TRAWL_NAMESPACE)')
  .action(async (urls: string[], flags) => {
    await seedCommand(ctx, urls, flags);
  });

program
  .command('status')
  .description('frontier, queues, counters and database of a namespace, as JSON')
  .option('--namespace <name>', 'crawl namespace (TRAWL_NAMESPACE)')
  .action(async (flags) => {
    await statusCommand(ctx, flags);
  });

const dlq = program.command('dlq').description('the dead-letter queue: URLs given up on, with their reasons');
dlq
  .command('list')
  .description('list dead-lettered jobs, newest first')
  .option('--namespace <name>', 'crawl namespace (TRAWL_NAMESPACE)')
  .option('--limit <n>', 'at most this many', wholeNumber, '100')
  .option('--json', 'as JSON')
  .action(async (flags) => {
    await dlqCommand(ctx, 'list', [], flags);
  });
dlq
  .command('retry')
  .description('run dead-lettered jobs again (through the host gate), with fresh attempts')
  .argument('[ids...]', 'job ids (see dlq list)')
  .option('--all', 'every dead-lettered job')
  .option('--namespace <name>', 'crawl namespace (TRAWL_NAMESPACE)')
  .action(async (ids: string[], flags) => {
    await dlqCommand(ctx, 'retry', ids, flags);
  });

const frontierCommand = program.command('frontier').description('the frontier in Redis');
frontierCommand
  .command('rebuild')
  .description('restore a crawl whose Redis data was lost (frontier, seen-set, policy, settings) from PostgreSQL; safe while workers run')
  .option('--namespace <name>', 'crawl namespace (TRAWL_NAMESPACE)')
  .option('--partitions <n>', 'frontier partitions (TRAWL_PARTITIONS): as the crawl was created with', wholeNumber)
  .option('--batch <n>', 'rows read per step (at most 1000)', wholeNumber, '1000')
  .option('--force', 'rebuild although the namespace\'s settings are in Redis (Redis restored from an old backup)')
  .action(async (flags) => {
    await frontierRebuildCommand(ctx, flags);
  });

const report = program.command('report').description('reports from PostgreSQL');
report
  .command('freshness')
  .description('per host: pages, median change interval, overdue pages, re-crawl deadline-miss rate')
  .option('--host <host>', 'one host only')
  .option('--grace-s <s>', 'a re-crawl later than its due time + this missed its deadline', wholeNumber, '300')
  .option('--recent-s <s>', 'count re-crawls of this last period', wholeNumber, '86400')
  .option('--json', 'as JSON')
  .option('--namespace <name>', 'crawl namespace (TRAWL_NAMESPACE)')
  .action(async (flags) => {
    await reportFreshnessCommand(ctx, flags);
  });

const withExportOptions = (command: Command): Command =>
  command
    .option('--host <host>', 'only the pages of this host')
    .option('--since <time>', 'only pages fetched at or after this ISO 8601 date or time')
    .option('--namespace <name>', 'crawl namespace (TRAWL_NAMESPACE)');

/** The export commands' module (the HTML parser, the WARC writer), loaded only by the command that runs them. */
const exportCommands = () => import('./export.js');

const exporter = program.command('export').description('what the crawl holds, for archives and downstream users');
withExportOptions(exporter.command('warc').description('WARC/1.1 files (with CDXJ indexes) of the crawled pages, bodies from the content store'))
  .option('--out <dir>', 'where the files go (default TRAWL_WARC_DIR)')
  .action(async (flags) => {
    await (await exportCommands()).exportWarcCommand(ctx, flags);
  });
withExportOptions(exporter.command('pages').description('the crawled pages: JSON Lines on stdout with their text or Markdown, or one Markdown file per page'))
  .option('--format <format>', 'text: JSON Lines, each page\'s record with its visible text (default); jsonl: JSON Lines of url, title, fetched_at, markdown; markdown: one .md file per page with YAML front matter, under --out', 'text')
  .option('--out <dir>', 'with --format markdown: the directory the files go to (<host>/<path>-<hash>.md)')
  .option('--images <mode>', 'with jsonl or markdown: drop images (default), keep their alt text, or link them (drop | alt | link)')
  .action(async (flags) => {
    await (await exportCommands()).exportPagesCommand(ctx, flags);
  });

const withTestWebOptions = (command: Command): Command =>
  command
    .option('--hosts <n>', 'hosts, each on its own 127.x.y.z address', wholeNumber, '20')
    .option('--pages <n>', 'pages per host', wholeNumber, '10')
    .option('--links <n>', 'links per page within the host', wholeNumber, '4')
    .option('--cross <n>', 'links per page to other hosts', wholeNumber, '1')
    .option('--latency-ms <ms>', 'delay before each response', wholeNumber, '5')
    .option('--seed <n>', 'generator seed', wholeNumber, '1')
    .option('--profile <name>', 'tiny (2 KB pages at --latency-ms) or realistic (real-sized pages, 20–150 links, per-host latency; --links and --latency-ms unused)', 'tiny');

withTestWebOptions(program.command('testweb').description('serve the synthetic web (many loopback hosts) until SIGTERM'))
  .option('--port <n>', 'port for every host (default: any free one)', wholeNumber)
  .action(async (flags) => {
    await testwebCommand(ctx, flags);
  });

withCrawlOptions(withTestWebOptions(program.command('demo').description('start the synthetic web and crawl it (namespace "demo", fresh)')))
  .option('--min-delay-ms <ms>', 'per-host politeness delay', wholeNumber, '100')
  .option('--json', 'print the final summary as JSON')
  .option('--no-progress', 'no live status line')
  .action(async (flags) => {
    await demoCommand(ctx, flags);
  });

program
  .command('config')
  .description('print the resolved configuration (or --markdown: the table of settings)')
  .option('--markdown', 'the settings table of the README')
  .action((flags) => configCommand(ctx, flags));

program.parseAsync(process.argv).then(
  // Without an argument: a command that set process.exitCode (`trawl seed` still waiting) keeps it.
  () => process.exit(),
  (error: unknown) => {
    if (error instanceof ConfigError) {
      process.stderr.write(`trawl: ${error.message}\n`);
      process.exit(2);
    }
    const message = isTrawlError(error) ? `${error.code}: ${error.message}` : error instanceof Error ? (error.stack ?? error.message) : String(error);
    process.stderr.write(`trawl: ${message}\n`);
    process.exit(1);
  },
);

import { once } from 'node:events';
import { loadConfig } from '@trawl/config';
import { ConfigError } from '@trawl/config';
import { countPagesForExport, Database, type PageForExport, pagesForExport, type PagesForExportOptions } from '@trawl/db';
import { findPostgres, redactUrl } from '@trawl/runtime';
import { type ContentStore, createContentStore } from '@trawl/store';
import { exportWarc } from '@trawl/warc';
import { Presets, SingleBar } from 'cli-progress';
import type { CliContext } from './commands.js';

export interface ExportFlags {
  host?: string;
  since?: string;
  out?: string;
  namespace?: string;
}

/** Texts read from the store at once while exporting pages (the lines still come out in order). */
const TEXT_READS_IN_FLIGHT = 16;

/** `--since`: an ISO 8601 date or time (`2026-05-01`, `2026-05-01T12:00:00Z`). */
export function parseSince(value: string | undefined): Date | undefined {
  if (value === undefined) return undefined;
  const at = /^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(value.trim()) ? new Date(value.trim()) : new Date(NaN);
  if (Number.isNaN(at.getTime())) throw new ConfigError([`--since: expected an ISO 8601 date or time (2026-05-01, 2026-05-01T12:00:00Z), got ${JSON.stringify(value)}`]);
  return at;
}

interface ExportSource {
  db: Database;
  store: ContentStore;
  filter: PagesForExportOptions;
  total: number;
  close(): Promise<void>;
}

/**
 * What an export reads: the namespace's pages in PostgreSQL and their bodies and texts in the
 * content store. Needs no Redis, and never starts embedded servers.
 */
async function openSource(ctx: CliContext, flags: ExportFlags): Promise<ExportSource & { config: ReturnType<typeof loadConfig> }> {
  const config = loadConfig({ env: ctx.env, overrides: { namespace: flags.namespace } });
  const filter: PagesForExportOptions = { host: flags.host, since: parseSince(flags.since) };
  const url = await findPostgres(config);
  if (!url) throw new Error('DATABASE_URL is not set and no PostgreSQL answers on 127.0.0.1:5432');
  const db = new Database({ url, schema: config.namespace, applicationName: `trawl:${config.namespace}:export:${process.pid}` });
  const store = createContentStore(config);
  const close = async () => {
    await store.close().catch(() => undefined);
    await db.close().catch(() => undefined);
  };
  try {
    const total = await countPagesForExport(db, filter).catch((error: Error) => {
      throw new ConfigError([`namespace "${config.namespace}" has no crawl at ${redactUrl(url)}: ${error.message}`]);
    });
    return { config, db, store, filter, total, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** Yields `rows` and moves a progress bar on stderr as they pass (only on a terminal). */
async function* withProgress<T>(ctx: CliContext, rows: AsyncIterable<T>, total: number): AsyncGenerator<T> {
  const bar = ctx.stderr.isTTY ? new SingleBar({ stream: ctx.stderr, format: ' {bar} {value}/{total} pages  {eta_formatted} left', etaBuffer: 200, hideCursor: true }, Presets.shades_classic) : null;
  bar?.start(total, 0);
  try {
    for await (const row of rows) {
      yield row;
      bar?.increment();
    }
  } finally {
    bar?.stop();
  }
}

/** `trawl export warc`: the crawl's pages as WARC/1.1 files with CDXJ indexes; prints the summary. */
export async function exportWarcCommand(ctx: CliContext, flags: ExportFlags): Promise<void> {
  const source = await openSource(ctx, flags);
  try {
    const { warc } = source.config;
    const summary = await exportWarc(withProgress(ctx, pagesForExport(source.db, source.filter), source.total), source.store, {
      dir: flags.out ?? warc.dir,
      prefix: warc.prefix,
      maxFileBytes: warc.maxFileBytes,
    });
    ctx.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  } finally {
    await source.close();
  }
}

/** One line of `trawl export pages`. */
export interface PageLine {
  url: string;
  fetched_at: string;
  status: number | null;
  title: string | null;
  description: string | null;
  language: string | null;
  canonical: string | null;
  word_count: number | null;
  text: string | null;
  duplicate_of: string | null;
  duplicate_kind: 'exact' | 'near' | null;
}

function pageLine(row: PageForExport, text: string | null): PageLine {
  return {
    url: row.url,
    fetched_at: row.fetchedAt.toISOString(),
    status: row.status,
    title: row.title,
    description: row.description,
    language: row.language,
    canonical: row.canonicalUrl,
    word_count: row.wordCount,
    text,
    duplicate_of: row.duplicateOfUrl,
    duplicate_kind: row.duplicateKind,
  };
}

/** `trawl export pages`: one JSON object per page on stdout (JSON Lines), with its text from the store. */
export async function exportPagesCommand(ctx: CliContext, flags: ExportFlags): Promise<void> {
  const source = await openSource(ctx, flags);
  const textOf = async (row: PageForExport): Promise<string | null> => (row.textKey ? ((await source.store.get(row.textKey))?.toString('utf8') ?? null) : null);
  const write = async (lines: PageLine[]) => {
    if (!ctx.stdout.write(lines.map((line) => `${JSON.stringify(line)}\n`).join(''))) await once(ctx.stdout, 'drain');
  };
  try {
    let chunk: PageForExport[] = [];
    const flush = async () => {
      const texts = await Promise.all(chunk.map(textOf));
      await write(chunk.map((row, i) => pageLine(row, texts[i] ?? null)));
      chunk = [];
    };
    for await (const row of withProgress(ctx, pagesForExport(source.db, source.filter), source.total)) {
      chunk.push(row);
      if (chunk.length >= TEXT_READS_IN_FLIGHT) await flush();
    }
    await flush();
  } finally {
    await source.close();
  }
}

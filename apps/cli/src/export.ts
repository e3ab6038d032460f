import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { loadConfig } from '@trawl/config';
import { ConfigError } from '@trawl/config';
import { countPagesForExport, Database, type PageForExport, pagesForExport, type PagesForExportOptions } from '@trawl/db';
import { decodeHtml, extractText, toMarkdown, type ToMarkdownOptions } from '@trawl/parse';
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
  /** `trawl export pages` only: text (default), jsonl or markdown. */
  format?: string;
  /** `trawl export pages` only, with jsonl or markdown: drop, alt or link. */
  images?: string;
}

export const PAGE_FORMATS = ['text', 'jsonl', 'markdown'] as const;
export type PageFormat = (typeof PAGE_FORMATS)[number];
const IMAGE_MODES = ['drop', 'alt', 'link'] as const;

/** What `trawl export pages` writes, from its flags. */
export interface PagesExport {
  format: PageFormat;
  images: NonNullable<ToMarkdownOptions['images']>;
  /** The directory of `--format markdown`. */
  out?: string;
}

/**
 * The flags of `trawl export pages`, checked before anything is opened: every bad one is named
 * (a typo in a format must not start a long export of the wrong thing).
 */
export function parsePagesExport(flags: ExportFlags): PagesExport {
  const problems: string[] = [];
  const format = (flags.format ?? 'text') as PageFormat;
  if (!PAGE_FORMATS.includes(format)) problems.push(`--format: expected ${PAGE_FORMATS.join(', ')}, got ${JSON.stringify(flags.format)}`);
  const images = (flags.images ?? 'drop') as PagesExport['images'];
  if (!IMAGE_MODES.includes(images)) problems.push(`--images: expected ${IMAGE_MODES.join(', ')}, got ${JSON.stringify(flags.images)}`);
  else if (flags.images !== undefined && format === 'text') problems.push('--images: only with --format jsonl or markdown (the text format has no images)');
  if (format === 'markdown' && (flags.out === undefined || flags.out.trim() === '')) problems.push('--out: --format markdown writes one file per page and needs a directory (--out <dir>)');
  if (format !== 'markdown' && flags.out !== undefined && PAGE_FORMATS.includes(format)) problems.push(`--out: only with --format markdown (--format ${format} writes JSON Lines to stdout)`);
  if (problems.length > 0) throw new ConfigError(problems);
  return { format, images, ...(format === 'markdown' ? { out: flags.out } : {}) };
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

/** One line of `trawl export pages --format jsonl`: what a retrieval pipeline indexes. */
export interface MarkdownLine {
  url: string;
  title: string | null;
  fetched_at: string;
  markdown: string;
}

const isHtml = (contentType: string | null): boolean => contentType !== null && /\b(?:text\/html|application\/xhtml\+xml)\b/i.test(contentType);

/**
 * The page's main content as Markdown, computed now from its stored body (so a better
 * extraction serves old crawls too); null when there is no HTML body to read: a redirect, an
 * error, a body not kept, another content type, or a page with no content.
 */
async function markdownOf(store: ContentStore, row: PageForExport, images: PagesExport['images']): Promise<string | null> {
  if (row.storageKey === null || !isHtml(row.contentType)) return null;
  const body = await store.get(row.storageKey);
  if (!body || body.length === 0) return null;
  const markdown = toMarkdown(decodeHtml(body, row.charset).text, row.url, { images });
  return markdown === '' ? null : markdown;
}

/**
 * A page's visible text: as stored beside its body (TRAWL_CONTENT_STORE_TEXT, or a page whose
 * body was not kept), else extracted again from what was stored — a rendered page's DOM, else
 * its body decoded with the charset the crawl decoded it with — by the extraction the crawl ran,
 * so the same text. Null for a page the crawl found no words in, or whose source is gone.
 */
export async function textOfPage(store: Pick<ContentStore, 'get'>, row: PageForExport): Promise<string | null> {
  if (row.textKey !== null) return (await store.get(row.textKey))?.toString('utf8') ?? null;
  if (row.wordCount === null || row.wordCount === 0) return null;
  const key = row.renderedKey ?? row.storageKey;
  const source = key === null ? null : await store.get(key);
  if (!source || source.length === 0) return null;
  const { text } = extractText(decodeHtml(source, row.renderedKey === null ? row.charset : 'utf-8').text, row.url);
  return text === '' ? null : text;
}

/** A YAML double-quoted scalar: JSON's string escapes are YAML's (YAML 1.2 §7.3.1). */
const yamlString = (value: string | null): string => (value === null ? 'null' : JSON.stringify(value));

/** A Markdown file with YAML front matter (url, title, fetched_at), as static-site and RAG loaders read them. */
export function markdownFile(line: MarkdownLine): string {
  return `---\nurl: ${yamlString(line.url)}\ntitle: ${yamlString(line.title)}\nfetched_at: ${yamlString(line.fetched_at)}\n---\n\n${line.markdown}\n`;
}

/**
 * Where a page's Markdown file goes under the export directory: `<host>/<path as a slug>-<8 hex
 * of the URL's SHA-256>.md`. The slug keeps names readable; the hash keeps two URLs (another
 * query, another case, a path cut short) from sharing a file.
 */
export function markdownPath(url: string): string {
  const hash = createHash('sha256').update(url).digest('hex').slice(0, 8);
  let host = 'unknown-host';
  let path = '';
  try {
    const parsed = new URL(url);
    host = parsed.host.replace(/[^A-Za-z0-9.-]+/g, '_') || host;
    path = `${decodeURIComponentSafe(parsed.pathname)}${parsed.search}`;
  } catch {
    path = url;
  }
  const slug = path
    .replace(/\.(?:html?|php|aspx?|jsp)$/i, '')
    .replace(/[^\p{L}\p{N}]+/gu, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 80)
    .replace(/-+$/, '');
  return join(host, `${slug === '' ? 'index' : slug}-${hash}.md`);
}

function decodeURIComponentSafe(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/**
 * `trawl export pages`: one JSON object per page on stdout (JSON Lines). `--format text` (the
 * default): the page's record with its visible text from the store. `--format jsonl`: url,
 * title, fetched_at and the main content as Markdown. `--format markdown --out <dir>`: one
 * Markdown file per page with YAML front matter, and a summary on stdout.
 */
export async function exportPagesCommand(ctx: CliContext, flags: ExportFlags): Promise<void> {
  const options = parsePagesExport(flags);
  const source = await openSource(ctx, flags);
  const textOf = (row: PageForExport): Promise<string | null> => textOfPage(source.store, row);
  const writeLines = async (lines: object[]) => {
    if (lines.length > 0 && !ctx.stdout.write(lines.map((line) => `${JSON.stringify(line)}\n`).join(''))) await once(ctx.stdout, 'drain');
  };
  const summary = { format: options.format, pages: 0, written: 0, withoutContent: 0, ...(options.out === undefined ? {} : { dir: options.out }) };
  const write = async (rows: PageForExport[]): Promise<void> => {
    summary.pages += rows.length;
    if (options.format === 'text') {
      const texts = await Promise.all(rows.map(textOf));
      await writeLines(rows.map((row, i) => pageLine(row, texts[i] ?? null)));
      summary.written += rows.length;
      return;
    }
    const markdowns = await Promise.all(rows.map((row) => markdownOf(source.store, row, options.images)));
    const lines: MarkdownLine[] = [];
    rows.forEach((row, i) => {
      const markdown = markdowns[i];
      if (markdown === null || markdown === undefined) summary.withoutContent++;
      else lines.push({ url: row.url, title: row.title, fetched_at: row.fetchedAt.toISOString(), markdown });
    });
    summary.written += lines.length;
    if (options.format === 'jsonl') return writeLines(lines);
    const dir = options.out as string;
    await Promise.all(
      lines.map(async (line) => {
        const file = join(dir, markdownPath(line.url));
        await mkdir(dirname(file), { recursive: true });
        await writeFile(file, markdownFile(line));
      }),
    );
  };
  try {
    let chunk: PageForExport[] = [];
    for await (const row of withProgress(ctx, pagesForExport(source.db, source.filter), source.total)) {
      chunk.push(row);
      if (chunk.length >= TEXT_READS_IN_FLIGHT) {
        await write(chunk);
        chunk = [];
      }
    }
    await write(chunk);
  } finally {
    await source.close();
  }
  if (options.format === 'markdown') ctx.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  // JSON Lines stay clean on stdout: the tally of pages left out goes to stderr.
  else if (options.format === 'jsonl' && summary.withoutContent > 0) ctx.stderr.write(`trawl export pages: ${summary.written} pages written, ${summary.withoutContent} without HTML content left out\n`);
}

import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { toMarkdown } from '@trawl/parse';
import { REALISTIC_PROFILE, TestWeb } from '@trawl/testweb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { dropNamespace, REPO, trawl, uniqueNamespace } from '../src/testing/index.js';

/**
 * `trawl export pages --format jsonl | markdown` after a real crawl: the Markdown is computed at
 * export from the bodies in the content store, and is what toMarkdown makes of the page the web
 * served. The default format (the record with its text) is unchanged, and bad flags stop the
 * command before it opens anything.
 */
let web: TestWeb;
let dir: string;
const namespace = uniqueNamespace('mdexport');
const contentDir = `.trawl/test-content/${namespace}`;
const env = { TRAWL_NAMESPACE: namespace, TRAWL_CONTENT_DIR: contentDir };

beforeAll(async () => {
  web = await TestWeb.start({ hosts: 2, pagesPerHost: 6, linksPerPage: 3, crossHostLinks: 1, seed: 21, baseAddress: '127.1.66.1', profile: REALISTIC_PROFILE });
  dir = await mkdtemp(join(tmpdir(), 'trawl-md-export-'));
  const crawl = trawl(['crawl', ...web.rootUrls(), '--json'], { ...env, TRAWL_ALLOW_NETWORKS: '127.0.0.0/8', TRAWL_SCOPE: 'any', TRAWL_MIN_DELAY_MS: '10' });
  const { code } = await crawl.exited;
  expect(code, crawl.stderr()).toBe(0);
}, 180_000);
afterAll(async () => {
  await web.stop();
  await dropNamespace(namespace);
  await rm(dir, { recursive: true, force: true });
  await rm(join(REPO, contentDir), { recursive: true, force: true });
});

async function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const proc = trawl(['export', 'pages', ...args], env);
  const { code } = await proc.exited;
  return { code, stdout: proc.stdout(), stderr: proc.stderr() };
}

describe('trawl export pages, as Markdown', () => {
  it('--format jsonl: url, title, fetched_at and the Markdown of every HTML page', async () => {
    const { code, stdout, stderr } = await run(['--format', 'jsonl']);
    expect(code, stderr).toBe(0);
    const lines = stdout.trim().split('\n').map((line) => JSON.parse(line) as Record<string, string>);
    const served = lines.filter((l) => web.htmlOf(l['url'] as string) !== null);
    expect(served.length).toBeGreaterThanOrEqual(10);
    for (const line of lines) {
      expect(Object.keys(line)).toEqual(['url', 'title', 'fetched_at', 'markdown']);
      expect(line['title']).toEqual(expect.any(String));
      expect(new Date(line['fetched_at'] as string).toISOString()).toBe(line['fetched_at']);
      const html = web.htmlOf(line['url'] as string);
      if (html !== null) expect(line['markdown'], line['url']).toBe(toMarkdown(html, line['url'] as string));
      expect(line['markdown']).toMatch(/^# \S/);
      // Links are absolute, and the site's navigation and footer are not in the content.
      expect(line['markdown']).not.toMatch(/\]\(\//);
    }
    expect(lines.some((l) => /\]\(http:\/\/127\.1\.66\.\d+:\d+\//.test(l['markdown'] as string))).toBe(true);
  }, 60_000);

  it('--format markdown --out: one file per page with YAML front matter, the same Markdown', async () => {
    const out = join(dir, 'md');
    const { code, stdout, stderr } = await run(['--format', 'markdown', '--out', out, '--host', new URL(web.rootUrls()[0] as string).host]);
    expect(code, stderr).toBe(0);
    const summary = JSON.parse(stdout) as { format: string; pages: number; written: number; withoutContent: number; dir: string };
    expect(summary).toMatchObject({ format: 'markdown', dir: out });
    const files = (await readdir(out, { recursive: true })).filter((f) => f.endsWith('.md'));
    expect(files.length).toBe(summary.written);
    expect(summary.written).toBeGreaterThanOrEqual(5);
    for (const file of files) {
      const text = await readFile(join(out, file), 'utf8');
      const match = /^---\n([\s\S]*?)\n---\n\n([\s\S]*)\n$/.exec(text);
      expect(match, file).not.toBeNull();
      const front = parseYaml(match?.[1] as string) as { url: string; title: string; fetched_at: string };
      expect(Object.keys(front)).toEqual(['url', 'title', 'fetched_at']);
      expect(relative(out, join(out, file)).split('/')[0]).toBe(new URL(front.url).host.replace(':', '_'));
      const html = web.htmlOf(front.url);
      if (html !== null) expect(match?.[2]).toBe(toMarkdown(html, front.url));
    }
  }, 60_000);

  it('the default format is the record with its text, as before; --images alt exports the same pages', async () => {
    const plain = await run([]);
    expect(plain.code, plain.stderr).toBe(0);
    const first = JSON.parse(plain.stdout.split('\n')[0] as string) as Record<string, unknown>;
    expect(Object.keys(first)).toEqual(['url', 'fetched_at', 'status', 'title', 'description', 'language', 'canonical', 'word_count', 'text', 'duplicate_of', 'duplicate_kind']);
    const alt = await run(['--format', 'jsonl', '--images', 'alt']);
    expect(alt.code, alt.stderr).toBe(0);
    expect(alt.stdout.trim().split('\n')).toHaveLength(plain.stdout.trim().split('\n').filter((l) => (JSON.parse(l) as { status: number }).status === 200).length);
  }, 60_000);

  // Every refusal is in export.test.ts; here, that one reaches the operator as exit code 2.
  it.each([
    [['--format', 'pdf'], '--format: expected text, jsonl, markdown, got "pdf"'],
    [['--format', 'markdown'], '--out: --format markdown writes one file per page'],
  ])('refuses %j with exit code 2, naming the flag', async (args, message) => {
    const { code, stdout, stderr } = await run(args);
    expect(code).toBe(2);
    expect(stderr).toContain(message);
    expect(stdout).toBe('');
  }, 30_000);
});

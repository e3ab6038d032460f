import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';

export const BENCHMARKS_FILE = new URL('../../BENCHMARKS.md', import.meta.url);

const HEADER = `# Benchmarks

Written by \`npm run bench\` (the \`bench\` workspace package; not part of \`npm test\`). Each section
is rewritten by the benchmark that owns it, with the command, the conditions and the date.
Run one section with \`npm run bench -- <name>\`.

\`compare-broad\`, \`compare-polite\`, \`cost\` and \`workers\` crawl the synthetic web's **realistic
profile** by default: HTML pages sized like real ones (lognormal, median 30 KB, p90 120 KB, a few
over 500 KB, capped at 1.5 MB), with prose, headings, a navigation block, a footer and 20–150
links, from hosts answering in a median 50 ms with a tail to 500 ms (a few slow hosts); on the
polite web every host answers within 100 ms, so the Crawl-delay binds rather than an adaptive
delay that grows with the response time. Everything is drawn from the seed: every run crawls the
same bytes at the same host speeds. \`npm run bench -- <name> --profile tiny\` runs the earlier
**tiny pages** (2 KB of links and padding, answering in 1–3 ms; 1–5 ms for \`workers\`) into a
section of its own (\`<name>-tiny\`), so both stay side by side, each labelled with what it ran on.
\`npm run bench -- testweb\` measures the profile as drawn and what serving it costs the server.
`;

/** Replaces (or appends) one benchmark's section of BENCHMARKS.md. */
export function writeSection(id: string, markdown: string): void {
  const start = `<!-- bench:${id}:start -->`;
  const end = `<!-- bench:${id}:end -->`;
  let doc = existsSync(BENCHMARKS_FILE) ? readFileSync(BENCHMARKS_FILE, 'utf8') : HEADER;
  const block = `${start}\n${markdown.trim()}\n${end}`;
  const from = doc.indexOf(start);
  const to = doc.indexOf(end);
  if (from >= 0 && to > from) doc = doc.slice(0, from) + block + doc.slice(to + end.length);
  else doc = `${doc.trimEnd()}\n\n${block}\n`;
  writeFileSync(BENCHMARKS_FILE, doc);
}

export function machine(extra: Record<string, string> = {}): string {
  const cpu = cpus();
  const facts = {
    date: new Date().toISOString().slice(0, 16).replace('T', ' ') + ' UTC',
    cpu: `${cpu.length} × ${cpu[0]?.model ?? 'unknown'}`,
    memory: `${Math.round(totalmem() / 2 ** 30)} GiB`,
    node: process.version,
    ...extra,
  };
  return Object.entries(facts)
    .map(([k, v]) => `${k}: ${v}`)
    .join(' · ');
}

export function table(headers: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`;
  return [line(headers), line(headers.map(() => '---')), ...rows.map(line)].join('\n');
}

export const fmt = (n: number, digits = 0): string =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/**
 * Which synthetic web a benchmark crawls: `realistic` (the default: pages and hosts that look like
 * the web, see libs/testweb's README) or `tiny` (the 2 KB pages answering in a few ms that the
 * earlier benchmarks used). Each profile writes its own section of BENCHMARKS.md, so the tiny
 * rows stay beside the realistic ones.
 */
import { describeProfile, type PageProfile, realisticProfile, TestWeb, type TestWebOptions } from '@trawl/testweb';

export const BENCH_PROFILES = ['realistic', 'tiny'] as const;
export type BenchProfile = (typeof BENCH_PROFILES)[number];

/** `--profile tiny` or `--profile=tiny` among the arguments (default realistic); the other arguments are returned as they were. */
export function parseProfileArgs(args: readonly string[]): { profile: BenchProfile; rest: string[] } {
  const rest: string[] = [];
  let profile: string = 'realistic';
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i] as string;
    if (arg === '--profile') {
      profile = args[i + 1] ?? '';
      i += 1;
    } else if (arg.startsWith('--profile=')) profile = arg.slice('--profile='.length);
    else rest.push(arg);
  }
  if (!(BENCH_PROFILES as readonly string[]).includes(profile)) {
    throw new Error(`--profile must be one of ${BENCH_PROFILES.join(', ')}, got ${JSON.stringify(profile)}`);
  }
  return { profile: profile as BenchProfile, rest };
}

/** The web a benchmark's shape gives under a profile, and its label for the report. */
export interface ProfiledWeb {
  web: TestWebOptions;
  /** What the pages are: `tiny pages (2 KB, 1–3 ms)` or the realistic profile's parameters. */
  label: string;
  /** BENCHMARKS.md section: the benchmark's own id for realistic, `<id>-tiny` for tiny. */
  sectionId: string;
  /** The command that writes the section. */
  command: string;
}

const range = (latency: TestWebOptions['latencyMs']): string =>
  latency === undefined ? '0 ms' : typeof latency === 'number' ? `${latency} ms` : `${latency.min}–${latency.max} ms`;

/**
 * `tinyWeb` is the benchmark's web as it always was (tiny pages, its fixed latency). Realistic
 * drops its `latencyMs` and `pageBytes` for the realistic profile, with latency capped at
 * `maxLatencyMs` if given (polite benchmarks: the Crawl-delay must bind, not the response time).
 */
export function profiledWeb(id: string, tinyWeb: TestWebOptions, profile: BenchProfile, options: { maxLatencyMs?: number } = {}): ProfiledWeb {
  if (profile === 'tiny') {
    return {
      web: tinyWeb,
      label: `tiny pages (${Math.round((tinyWeb.pageBytes ?? 2048) / 1024)} KB, ${range(tinyWeb.latencyMs)})`,
      sectionId: `${id}-tiny`,
      command: `npm run bench -- ${id} --profile tiny`,
    };
  }
  const { latencyMs: _latency, pageBytes: _bytes, ...shape } = tinyWeb;
  const pages: PageProfile = realisticProfile(options);
  const cacheBytes = pageCacheBytes();
  const kept = cacheBytes > 0 ? '; pages drawn once before the crawls and served from memory' : '';
  return { web: { ...shape, profile: pages, pageCacheBytes: cacheBytes }, label: `${describeProfile(pages)}${kept}`, sectionId: id, command: `npm run bench -- ${id}` };
}

/**
 * How many bytes of rendered pages a realistic benchmark web keeps (BENCH_PAGE_CACHE_MB, default
 * 1024; 0 draws every page on each request). A realistic page takes the web about a millisecond of
 * CPU to draw (`npm run bench -- testweb`): at a few hundred pages per second that is a fifth of
 * a core taken from the crawler measured beside it, which a real web's servers would not take.
 * Drawn once before the crawls (`startBenchWeb`), every crawler is served from memory alike.
 */
export function pageCacheBytes(env: Record<string, string | undefined> = process.env): number {
  const mb = Number(env.BENCH_PAGE_CACHE_MB ?? 1024);
  if (!(Number.isFinite(mb) && mb >= 0)) throw new Error(`BENCH_PAGE_CACHE_MB must be a number ≥ 0, got ${JSON.stringify(env.BENCH_PAGE_CACHE_MB)}`);
  return Math.floor(mb * 1024 * 1024);
}

/** Starts a benchmark's web and, if it keeps its pages, draws them all before anything is timed. */
export async function startBenchWeb(options: TestWebOptions): Promise<TestWeb> {
  const web = await TestWeb.start(options);
  const started = performance.now();
  const warmed = web.warmPages();
  if (warmed.pages > 0) {
    console.log(`web: ${warmed.pages} pages drawn and kept (${(warmed.bytes / 1024 / 1024).toFixed(1)} MB) in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
  return web;
}

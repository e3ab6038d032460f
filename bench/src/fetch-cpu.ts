/**
 * The fetcher's own CPU per request: `process.cpuUsage()` of this process (the client alone; the
 * server runs in a child process) over a bounded number of keep-alive GETs of a ~30 KB page on
 * loopback, in a few rounds with a fresh Fetcher each, after a warm-up long enough for V8 to have
 * optimized the hot paths (its compiler threads count in `process.cpuUsage()`). Prints each round
 * and the median. Standalone (not part of `npm run bench`):
 *
 *   node --conditions=trawl-source --import tsx bench/src/fetch-cpu.ts [requests=3000] [rounds=3] [concurrency=8] [encoding=identity|gzip]
 *
 * BENCH_FETCH_BASELINE=<another copy's libs/fetch/src/index.ts> also measures that Fetcher, in
 * the same process, each round running both back to back (alternating which goes first), so
 * that on a busy machine the two see the same load.
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { Fetcher } from '@trawl/fetch';

type FetcherClass = typeof Fetcher;

const PAGE_BYTES = 30 * 1024;
const WARM_UP_REQUESTS = 3000;

/** The child: one node:http server serving the same ~30 KB HTML page for every path. */
async function serve(encoding: string): Promise<void> {
  const paragraph = '<p>Lorem ipsum dolor sit amet, <a href="/next">consectetur</a> adipiscing elit.</p>\n';
  const html = Buffer.from(`<!doctype html><html><head><title>t</title></head><body>\n${paragraph.repeat(Math.ceil(PAGE_BYTES / paragraph.length))}</body></html>`).subarray(0, PAGE_BYTES);
  const body = encoding === 'gzip' ? gzipSync(html) : html;
  const headers = { 'content-type': 'text/html; charset=utf-8', 'content-length': body.length, ...(encoding === 'gzip' ? { 'content-encoding': 'gzip' } : {}) };
  const server = createServer((_req, res) => {
    res.writeHead(200, headers);
    res.end(body);
  });
  server.keepAliveTimeout = 10_000;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  process.send?.({ port: typeof address === 'object' && address !== null ? address.port : 0 });
  process.on('disconnect', () => process.exit(0));
}

async function fetchMany(fetcher: Fetcher, origin: string, count: number, concurrency: number): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      const i = next++;
      const result = await fetcher.fetch(`${origin}/page/${i}`, { acceptBody: (type) => type === 'text/html' });
      if (result.status !== 200 || result.body.length !== PAGE_BYTES) throw new Error(`unexpected response: ${result.status}, ${result.body.length} bytes`);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

/** One round: a fresh Fetcher, a warm-up, then `requests` GETs measured. CPU µs per request. */
async function round(Client: FetcherClass, origin: string, warmUp: number, requests: number, concurrency: number): Promise<{ us: number; line: string }> {
  const fetcher = new Client({
    userAgent: 'trawl-bench/1.0',
    timeouts: { connectMs: 5000, firstByteMs: 5000, idleMs: 5000, totalMs: 10_000 },
    maxBodyBytes: 1024 * 1024,
    ssrf: { allowNetworks: ['127.0.0.0/8'] },
  });
  try {
    await fetchMany(fetcher, origin, warmUp, concurrency);
    const before = process.cpuUsage();
    const started = process.hrtime.bigint();
    await fetchMany(fetcher, origin, requests, concurrency);
    const cpu = process.cpuUsage(before);
    const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
    const us = (cpu.user + cpu.system) / requests;
    return {
      us,
      line: `${us.toFixed(1)} µs CPU/request (user ${(cpu.user / requests).toFixed(1)}, system ${(cpu.system / requests).toFixed(1)}), ${(requests / (wallMs / 1000)).toFixed(0)} req/s`,
    };
  } finally {
    fetcher.close();
  }
}

async function main(): Promise<void> {
  const [requests = 3000, rounds = 3, concurrency = 8] = process.argv.slice(2, 5).map(Number);
  const encoding = process.argv[5] ?? 'identity';
  if (!(requests > 0 && requests <= 20_000 && rounds > 0 && rounds <= 9 && concurrency > 0 && concurrency <= 64)) {
    throw new Error('requests 1..20000, rounds 1..9, concurrency 1..64');
  }
  const baselinePath = process.env.BENCH_FETCH_BASELINE;
  const clients: Array<[string, FetcherClass]> = [['workspace', Fetcher]];
  if (baselinePath) clients.push(['baseline', ((await import(pathToFileURL(baselinePath).href)) as { Fetcher: FetcherClass }).Fetcher]);
  const child = fork(fileURLToPath(import.meta.url), ['--serve', encoding], { execArgv: process.execArgv });
  const [{ port }] = (await once(child, 'message')) as [{ port: number }];
  const origin = `http://127.0.0.1:${port}`;
  const results = new Map<string, number[]>(clients.map(([name]) => [name, []]));
  try {
    for (let i = 0; i < rounds; i++) {
      for (const [name, Client] of i % 2 === 0 ? clients : [...clients].reverse()) {
        // Warm-up: the JIT before the first round, the keep-alive sockets before each.
        const { us, line } = await round(Client, origin, i === 0 ? WARM_UP_REQUESTS : concurrency * 10, requests, concurrency);
        results.get(name)?.push(us);
        console.log(`round ${i + 1} ${name}: ${requests} requests, ${line}`);
      }
    }
    for (const [name, values] of results) {
      console.log(`median ${name}: ${median(values).toFixed(1)} µs CPU/request (${encoding}, ${PAGE_BYTES} B body, concurrency ${concurrency}, node ${process.version})`);
    }
  } finally {
    child.disconnect();
  }
}

if (process.argv[2] === '--serve') await serve(process.argv[3] ?? 'identity');
else await main();

import { type ChildProcess, fork } from 'node:child_process';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { createWebModel, describeProfile, hostLatencyMs, pageSpec, REALISTIC_PROFILE, realisticProfile, renderRealisticPage } from '@trawl/testweb';
import { replyFrom } from './child.js';
import { fmt, machine, median, table, writeSection } from './report.js';

const SERVER = fileURLToPath(new URL('./testweb-server.ts', import.meta.url));
/** Requests in flight while measuring the server (a crawler's few tens of jobs). */
const CONCURRENCY = 16;

const quantile = (values: readonly number[], q: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(q * (sorted.length - 1))] as number;
};

/** Sizes and link counts of the realistic profile over hosts × pages, rendered in this process. */
function distribution(hosts: number, pagesPerHost: number) {
  const p = REALISTIC_PROFILE;
  const model = createWebModel({
    hosts,
    pagesPerHost,
    linksPerPage: 4,
    crossHostLinks: 2,
    seed: 21,
    noisyLinks: true,
    queryPages: true,
    layout: { links: p.links, navLinks: p.navLinks, footerLinks: p.footerLinks, noisyShare: p.noisyLinkShare },
  });
  const sizes: number[] = [];
  const links: number[] = [];
  for (let host = 0; host < hosts; host++) {
    for (let page = 0; page < pagesPerHost; page++) {
      sizes.push(Buffer.byteLength(renderRealisticPage(model, host, page, (h) => `http://h${h}.test:8080`, p, 0)));
      links.push(pageSpec(model, host, page).links.filter((l) => l.kind === 'page').length);
    }
  }
  const latency = Array.from({ length: 1000 }, (_, host) => hostLatencyMs(p, 21, host));
  const polite = Array.from({ length: 1000 }, (_, host) => hostLatencyMs(realisticProfile({ maxLatencyMs: 100 }), 21, host));
  return { sizes, links, latency, polite };
}

const reply = <T>(child: ChildProcess, field: string): Promise<T> => replyFrom<T>(child, field, "the web's process");

function fetchAll(urls: readonly string[]): Promise<void> {
  // A connection per request, as a crawler spread over many hosts mostly opens.
  const agent = new http.Agent({ keepAlive: false, maxSockets: CONCURRENCY });
  let next = 0;
  const one = (): Promise<void> => {
    const url = urls[next++];
    if (url === undefined) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      http
        .get(url, { agent }, (res) => {
          res.on('data', () => undefined);
          res.on('end', resolve);
        })
        .on('error', reject);
    }).then(one);
  };
  return Promise.all(Array.from({ length: CONCURRENCY }, one)).then(() => agent.destroy());
}

/** The web's server CPU per page: its own process, every page of the web fetched once, `CONCURRENCY` at a time. */
async function serverCpu(profile: 'realistic' | 'tiny', hosts: number, pagesPerHost: number) {
  const options = { hosts, pagesPerHost, linksPerPage: 4, crossHostLinks: 2, seed: 21, baseAddress: '127.1.100.1', ...(profile === 'realistic' ? { profile } : {}) };
  const child = fork(SERVER, [JSON.stringify(options)], { execArgv: ['--conditions=trawl-source', '--import', 'tsx'] });
  try {
    const { urls, startCpuMs } = await reply<{ urls: string[]; startCpuMs: number }>(child, 'urls');
    // A first pass warms the JIT; the second is measured.
    await fetchAll(urls.slice(0, 200));
    const marked = reply(child, 'marked');
    child.send('mark');
    await marked;
    const started = performance.now();
    await fetchAll(urls);
    const ms = performance.now() - started;
    const used = reply<{ cpuMs: number; requests: number; bytes: number }>(child, 'cpuMs');
    child.send('cpu');
    const { cpuMs, requests, bytes } = await used;
    const measured = requests - 200;
    return { profile, pages: urls.length, startCpuMs, cpuMsPerPage: cpuMs / measured, kbPerPage: bytes / requests / 1000, pagesPerS: (urls.length * 1000) / ms };
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.send('stop');
    await exited;
  }
}

/** The realistic profile's figures as drawn (sizes, links, host latencies) and the web server's CPU per page on each profile. */
export async function testwebBench(): Promise<void> {
  const hosts = Number(process.env.BENCH_TESTWEB_HOSTS ?? 200);
  const { sizes, links, latency, polite } = distribution(hosts, 10);
  const kb = (bytes: number) => fmt(bytes / 1000, 1);
  const cpu = [await serverCpu('realistic', hosts, 10), await serverCpu('tiny', hosts, 10)];
  const md = `## The synthetic web's realistic profile, as drawn, and what serving it costs

Command: \`npm run bench -- testweb\`. ${machine()}

Profile: ${describeProfile(REALISTIC_PROFILE)} (libs/testweb's README, "Page profiles").
Over the ${fmt(sizes.length)} pages of a ${hosts} × 10 web (seed 21), rendered:

${table(
  ['', 'median', 'p90', 'max', 'other'],
  [
    ['HTML body, KB', kb(quantile(sizes, 0.5)), kb(quantile(sizes, 0.9)), kb(Math.max(...sizes)), `mean ${kb(sizes.reduce((a, b) => a + b, 0) / sizes.length)}; ${sizes.filter((s) => s > 500_000).length} pages over 500 KB; min ${kb(Math.min(...sizes))}`],
    ['links to pages per page', fmt(quantile(links, 0.5)), fmt(quantile(links, 0.9)), fmt(Math.max(...links)), `min ${Math.min(...links)}`],
    ['host latency, ms (1,000 hosts)', fmt(median(latency), 1), fmt(quantile(latency, 0.9), 1), fmt(Math.max(...latency), 1), `${latency.filter((ms) => ms > 300).length} hosts over 300 ms`],
    ['host latency capped at 100 ms (polite), ms', fmt(median(polite), 1), fmt(quantile(polite, 0.9), 1), fmt(Math.max(...polite), 1), ''],
  ],
)}

The server's CPU per page: the web in a process of its own, every page fetched once over HTTP
(a connection per request, ${CONCURRENCY} at a time, latency 0 so only CPU counts; a first 200 requests warm it up and are not counted):

${table(
  ['pages', 'pages fetched', 'KB per page', 'server CPU ms / page', 'pages/s', 'start-up CPU ms'],
  cpu.map((c) => [c.profile, fmt(c.pages), fmt(c.kbPerPage, 1), fmt(c.cpuMsPerPage, 2), fmt(c.pagesPerS), fmt(c.startCpuMs)]),
)}

Start-up includes building the realistic profile's paragraph pool (once per seed). pages/s is
what one process of the web serves flat out to this one client on the shared machine: far above
what a crawl of it asks for.`;
  if (process.env.BENCH_TESTWEB_HOSTS === undefined) writeSection('testweb', md);
  console.log(md);
}

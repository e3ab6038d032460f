// Runs Crawlee's CheerioCrawler over the synthetic web, configured as politely as it allows, in
// its own process (bench/src/compare.ts starts it). Argument: a JSON RunnerConfig. Prints one
// JSON line with its timing and resource use.
import dns from 'node:dns';

export interface RunnerConfig {
  seeds: string[];
  /** name → address: the synthetic web's hosts file, answered before DNS. */
  hosts: [string, string][];
  concurrency: number;
  sameDomainDelaySecs: number;
  respectRobotsTxtFile: boolean;
  maxRequestRetries: number;
}

const config = JSON.parse(process.argv[2] ?? '{}') as RunnerConfig;
const hosts = new Map(config.hosts);

// Crawlee has no DNS override; name resolution goes through dns.lookup, which net calls late.
const lookup = dns.lookup;
(dns as { lookup: unknown }).lookup = function patched(hostname: string, options: unknown, callback?: unknown) {
  const done = (typeof options === 'function' ? options : callback) as (e: Error | null, a: unknown, f?: number) => void;
  const opts = (typeof options === 'object' && options !== null ? options : {}) as { all?: boolean };
  const address = hosts.get(hostname.toLowerCase());
  if (address === undefined) return (lookup as (...a: unknown[]) => void).call(dns, hostname, options, callback);
  process.nextTick(() => (opts.all ? done(null, [{ address, family: 4 }]) : done(null, address, 4)));
};

const { CheerioCrawler, Configuration } = await import('@crawlee/cheerio');
const { MemoryStorage } = await import('@crawlee/memory-storage');

const configuration = new Configuration({ persistStorage: false, purgeOnStart: true, storageClient: new MemoryStorage({ persistStorage: false }) });
const crawler = new CheerioCrawler(
  {
    minConcurrency: config.concurrency,
    maxConcurrency: config.concurrency,
    sameDomainDelaySecs: config.sameDomainDelaySecs,
    respectRobotsTxtFile: config.respectRobotsTxtFile,
    maxRequestRetries: config.maxRequestRetries,
    requestHandlerTimeoutSecs: 30,
    async requestHandler({ enqueueLinks }) {
      await enqueueLinks({ strategy: 'all' });
    },
  },
  configuration,
);

const cpu = process.cpuUsage();
const started = Date.now();
const stats = await crawler.run(config.seeds);
const used = process.cpuUsage(cpu);
console.log(
  JSON.stringify({
    durationMs: Date.now() - started,
    cpuMs: Math.round((used.user + used.system) / 1000),
    maxRssMb: Math.round(process.resourceUsage().maxRSS / 1024),
    finished: stats.requestsFinished,
    failed: stats.requestsFailed,
  }),
);
process.exit(0);

import { z } from 'zod';
import { bool, cidrList, int, list, num, oneOf, splitList, str, trustProxy, url, urlList } from './fields.js';
import { priorityWeights } from './priority.js';
import { type ProxyEntry, proxyPlanProblems, proxyRules, proxyTiers, proxyUrls, redactProxyUrl } from './proxies.js';

/** Metadata of each setting: the environment variable that sets it and what it means. */
export interface SettingMeta {
  env: string;
  doc: string;
  /** A secret (API tokens): its value never appears in an error message or in `trawl config`. */
  secret?: boolean;
  /** For a secret: how `trawl config` shows its value instead of `***` (e.g. proxy URLs without their credentials). */
  show?: (value: unknown) => unknown;
}
export const settingsRegistry = z.registry<SettingMeta>();
const set = <T extends z.ZodType>(schema: T, env: string, doc: string, extra: Pick<SettingMeta, 'secret' | 'show'> = {}): T => {
  settingsRegistry.add(schema, { env, doc, ...extra });
  return schema;
};

/**
 * How long past TRAWL_FETCH_DEADLINE_MS a fetch attempt holds its host's token (a dead worker's
 * host stays closed that long), and the least TRAWL_LEASE_MS must exceed the deadline by.
 */
export const FETCH_HOLD_MARGIN_MS = 5000;

/** PostgreSQL's own schemas: never a crawl's namespace (its schema is dropped by `--fresh`). */
const RESERVED_NAMESPACES = ['public', 'information_schema'];

/**
 * Every setting, declared once: schema, default, environment variable, and documentation. The
 * README's configuration table is generated from this (npm run docs:config) and a test keeps
 * the two in step.
 */
export const configSchema = z.object({
  redisUrl: set(
    urlList(['redis:', 'rediss:']).optional(),
    'REDIS_URL',
    'Redis server. Unset: `trawl crawl` uses 127.0.0.1:6379 if it answers, else starts a private redis-server under `.trawl/`. With `TRAWL_REDIS_CLUSTER`: one or more seed nodes of the cluster, comma-separated (`redis://10.0.0.5:7000,redis://10.0.0.6:7000`).',
  ),
  redisCluster: set(
    bool().default(false),
    'TRAWL_REDIS_CLUSTER',
    'Connect to a Redis Cluster through the seed nodes in `REDIS_URL` (which must be set). Every key a Lua script or queue touches at once shares a hash tag, so partitions, seen-set shards and fetch queues spread over the masters.',
  ),
  databaseUrl: set(url(['postgres:', 'postgresql:']).optional(), 'DATABASE_URL', 'PostgreSQL server. Unset: `trawl crawl` uses postgres@127.0.0.1:5432/trawl if it answers, else an embedded PGlite under `.trawl/`.'),
  namespace: set(
    z
      .string()
      .trim()
      .regex(/^[a-z][a-z0-9_]{0,39}$/, 'expected lowercase letters, digits and _ (starting with a letter, at most 40)')
      .refine((name) => !RESERVED_NAMESPACES.includes(name) && !name.startsWith('pg_'), 'names one of PostgreSQL\'s own schemas (public, information_schema, pg_*): choose another')
      .default('trawl'),
    'TRAWL_NAMESPACE',
    'Names one crawl: the Redis key prefix and the PostgreSQL schema. Processes with the same namespace share a crawl. Not `public`, `information_schema` or `pg_*`; `--fresh` drops only a schema trawl made.',
  ),
  partitions: set(int(1, 1024).default(1), 'TRAWL_PARTITIONS', 'Frontier partitions (hosts are spread over them on a consistent-hash ring); each has its own fetch queue. Every process of a crawl must agree.'),

  policy: z.object({
    scope: set(oneOf(['host', 'domain', 'any']).default('domain'), 'TRAWL_SCOPE', 'Which discovered links are followed: the seeds\' hosts, their registrable domains, or any.'),
    maxDepth: set(int(0).optional(), 'TRAWL_MAX_DEPTH', 'Links followed from a seed at most (seeds are depth 0). Unset: no limit.'),
    maxPages: set(int(1).optional(), 'TRAWL_MAX_PAGES', 'Stop dispatching after this many URLs are done. Unset: no limit.'),
    minDelayMs: set(
      int(0).default(1000),
      'TRAWL_MIN_DELAY_MS',
      'Per-host politeness delay for hosts whose robots.txt names no Crawl-delay: the next request to a host starts this long after the previous response ended. A stated Crawl-delay replaces it (see TRAWL_CRAWL_DELAY_FLOOR_MS, TRAWL_DELAY_FORCE).',
    ),
    maxUrlLength: set(int(16, 65_536).default(2048), 'TRAWL_MAX_URL_LENGTH', 'Longer canonical URLs are dropped.'),
    maxUrlsPerHost: set(int(0).default(0), 'TRAWL_MAX_URLS_PER_HOST', 'URLs ever queued per host (0: no limit).'),
    stripParams: set(list().optional(), 'TRAWL_STRIP_PARAMS', 'Query parameters removed during normalization (comma-separated, `utm_*` is a prefix). Unset: the built-in tracking and session list.'),
    sortQuery: set(bool().default(true), 'TRAWL_SORT_QUERY', 'Sort query parameters by name during normalization.'),
    maxLinksPerPage: set(int(1).default(5000), 'TRAWL_MAX_LINKS_PER_PAGE', 'Links taken from one page at most.'),
    maxRedirects: set(int(0, 20).default(5), 'TRAWL_MAX_REDIRECTS', 'Redirect hops followed from one URL (each hop is queued as a new URL and passes scope, robots, the SSRF guard and the seen-set).'),
    maxQueryVariants: set(int(0).default(200), 'TRAWL_MAX_QUERY_VARIANTS', 'URLs queued per host and path with different query strings (faceted search, sort orders); 0: no limit.'),
    maxDateVariants: set(
      int(0).default(50),
      'TRAWL_MAX_DATE_VARIANTS',
      'URLs queued per host and date pattern: one path with different dates in it or in its query (a calendar: /cal/2031/05/17 and /cal?date=2031-05-17 are one pattern; each dated post /blog/2026/11/30/title is its own); 0: no limit.',
    ),
    trapChecks: set(bool().default(true), 'TRAWL_TRAP_CHECKS', 'Drop links that look like crawler traps: repeated path segments, very deep paths, exploding queries, calendar dates far from today.'),
    nonHtml: set(oneOf(['skip', 'store']).default('skip'), 'TRAWL_NON_HTML', 'Responses that are not HTML: skip (record status and type, do not download the body) or store (download and store, never parse).'),
    skipExtensions: set(
      list().optional(),
      'TRAWL_SKIP_EXTENSIONS',
      'Links whose file name ends in one of these extensions (comma-separated, e.g. pdf,jpg,tar.gz) are recorded as skipped and never fetched. Unset: the built-in list (images, audio, video, archives, office documents, PDF, executables, fonts) when TRAWL_NON_HTML=skip, none when it is store; a lone comma names none.',
    ),
  }),

  politeness: z.object({
    crawlDelayFloorMs: set(int(0).default(250), 'TRAWL_CRAWL_DELAY_FLOOR_MS', 'Shortest robots.txt Crawl-delay honoured: a shorter one (above 0) is raised to this, so no robots.txt brings a host past 4 requests a second by default.'),
    forceDelay: set(bool().default(false), 'TRAWL_DELAY_FORCE', 'true: TRAWL_MIN_DELAY_MS is the least delay of every host, and a Crawl-delay can only lengthen it (StormCrawler\'s fetcher.server.delay.force).'),
    maxDelayMs: set(int(0).default(60_000), 'TRAWL_MAX_DELAY_MS', 'Cap on the per-host delay (whatever the back-off or response times say; a Retry-After can exceed it).'),
    adaptiveFactor: set(num(0, 100).default(5), 'TRAWL_ADAPTIVE_DELAY_FACTOR', 'The delay is at least this × the host\'s response time (time to the response headers; Heritrix uses 5 × the fetch time); 0 turns it off.'),
    adaptiveResponseCapMs: set(int(0).default(5000), 'TRAWL_ADAPTIVE_RESPONSE_CAP_MS', 'The most one response time counts for in the adaptive term.'),
    adaptiveSamples: set(int(1, 20).default(3), 'TRAWL_ADAPTIVE_SAMPLES', 'The adaptive term follows the lower median of the host\'s last this-many response times, so one slow URL does not slow its host (1: the last response alone).'),
    backoffBaseMs: set(int(0).default(5000), 'TRAWL_BACKOFF_BASE_MS', 'Per-host back-off after the first failure or throttle (429/503); doubles per consecutive one, halves per success.'),
    backoffMaxMs: set(int(0).default(600_000), 'TRAWL_BACKOFF_MAX_MS', 'Longest per-host back-off.'),
    hostFailureThreshold: set(
      int(1, 100).default(3),
      'TRAWL_HOST_FAILURE_THRESHOLD',
      'A failure of one URL while its host answers (a 500, a timeout waiting for its response) backs the host off only when it makes this many failures in a row at the host; throttling, connection and DNS failures, 502 and 504 back it off at once (1: every failure does).',
    ),
    maxRetryAfterMs: set(int(0).default(3_600_000), 'TRAWL_MAX_RETRY_AFTER_MS', 'Longest Retry-After honoured (seconds or HTTP date, on 429 and 503).'),
    blockThreshold: set(
      int(0, 100).default(3),
      'TRAWL_BLOCK_THRESHOLD',
      'Refusals in a row (a 403, a 429 without Retry-After, a bot-challenge page, a redirect to a challenge URL, a connection reset at once; nothing else from the host between them, robots.txt included) that make a host blocked, as opposed to slow (timeouts, 429/503 with Retry-After: backed off). A blocked host moves up one proxy tier (TRAWL_PROXY_TIERS, in order; never down during a crawl) and the refused URLs are tried again through it; with no tier left it is paused with its reason (shown on its host page; resume it there) — but only when the refusal is unmistakable: it was moved up before, or the refusals are challenge pages. Without proxies a plain 403 stays the page\'s answer and a bare 429 is backed off. While a tier is left above, every refusal is tried again (a retry of the URL). 0: refusals are not looked for.',
    ),
    blockMarkers: set(
      list().optional(),
      'TRAWL_BLOCK_MARKERS',
      'Text that marks a bot-challenge page, matched case-insensitively in the first 16 KiB of any response (comma-separated). Unset: the built-in list of the common bot walls\' challenge pages (Cloudflare, Imperva, PerimeterX, DataDome, Akamai, Sucuri, DDoS-Guard, AWS WAF).',
    ),
    blockUrlMarkers: set(
      list().optional(),
      'TRAWL_BLOCK_URL_MARKERS',
      'Text that marks a challenge URL in a redirect\'s Location, matched case-insensitively (comma-separated). Unset: the built-in list (`/cdn-cgi/challenge-platform/`, `captcha-delivery.com`, `validate.perfdrive.com`, …).',
    ),
    key: set(
      oneOf(['host', 'ip', 'domain']).default('host'),
      'TRAWL_POLITENESS_KEY',
      'What one politeness group is: `host` (one request in flight and the delay per host name), `ip` (per server address: every host name on one address shares them; for shared hosting) or `domain` (per registrable domain: a.example.com and b.example.com share them). `ip` and `domain` cost two Redis calls per fetch (`domain` two more where its server has other names too, for TRAWL_IP_MAX_IN_FLIGHT); see docs/operations.md.',
    ),
    ipMaxInFlight: set(
      int(1, 10_000).default(6),
      'TRAWL_IP_MAX_IN_FLIGHT',
      'In `host` and `domain` mode, requests in flight at once to one server address, across every worker (many sites on one shared-hosting address would otherwise each get their own request). 6 is what a browser opens to one server; it binds only on addresses this process has seen serve more than one host name, so a crawl of distinct sites is never slowed nor costs a Redis call for it.',
    ),
    ipMinIntervalMs: set(
      int(0, 60_000).default(100),
      'TRAWL_IP_MIN_INTERVAL_MS',
      'Least time between request starts to one server address (in `host` mode on addresses shared by several host names, and in `ip` mode besides the delay): 100 ms, at most 10 requests a second to one shared-hosting server however many of its sites are due.',
    ),
  }),

  robots: z.object({
    obey: set(bool().default(true), 'TRAWL_ROBOTS', 'Obey robots.txt (RFC 9309). Turn off only for sites you own.'),
    productToken: set(z.string().trim().regex(/^[a-zA-Z_-]+$/, 'expected letters, _ and - only (RFC 9309 product token)').default('trawl'), 'TRAWL_ROBOTS_TOKEN', 'Our product token in robots.txt User-agent lines and robots meta tags (matched case-insensitively).'),
    ttlMs: set(int(1000, 86_400_000).default(86_400_000), 'TRAWL_ROBOTS_TTL_MS', 'How long a fetched robots.txt is trusted (at most 24 h).'),
    retryBaseMs: set(int(100).default(60_000), 'TRAWL_ROBOTS_RETRY_BASE_MS', 'After robots.txt fails (5xx, 429, timeout, connection), the host counts as fully disallowed and robots.txt is fetched again after this long, doubling per failure.'),
    attempts: set(
      int(1, 50).default(2),
      'TRAWL_ROBOTS_ATTEMPTS',
      'Tries per URL while its host\'s robots.txt is unavailable (each waits for the next robots.txt try, TRAWL_ROBOTS_RETRY_BASE_MS doubling); at most TRAWL_ATTEMPTS. Then the URL is recorded as failed and the re-crawl tries it again later (TRAWL_RECRAWL_FAILURE_BASE_S), so a host that is down does not hold the crawl for minutes.',
    ),
    serverError: set(
      oneOf(['disallow', 'allow']).default('disallow'),
      'TRAWL_ROBOTS_SERVER_ERROR',
      'robots.txt answering 5xx: disallow (RFC 9309 §2.3.1.4: the host counts as fully disallowed until robots.txt can be fetched, retried with back-off), or allow (the host is crawled as if robots.txt allowed everything — its last good copy\'s rules when there is one —, the 5xx is logged, robots.txt is fetched again after 1 hour, and the host never stalls). 429, timeouts and connection failures always disallow.',
    ),
    outageFallbackMs: set(int(0).default(30 * 86_400_000), 'TRAWL_ROBOTS_OUTAGE_FALLBACK_MS', 'After robots.txt has failed this long, use the last good copy if there is one (0: never; RFC 9309 suggests 30 days).'),
    maxCrawlDelayMs: set(int(0).default(30_000), 'TRAWL_MAX_CRAWL_DELAY_MS', 'Cap on a robots.txt Crawl-delay.'),
    overCap: set(oneOf(['clamp', 'skip']).default('clamp'), 'TRAWL_CRAWL_DELAY_OVER_CAP', 'A Crawl-delay above the cap: clamp it to the cap, or skip the host.'),
  }),

  worker: z.object({
    concurrency: set(int(1, 10_000).default(32), 'TRAWL_CONCURRENCY', 'Fetch jobs one worker process runs at once.'),
    roles: set(
      list().pipe(z.array(z.enum(['fetch', 'process', 'render'])).min(1)).default(['fetch', 'process', 'render']),
      'TRAWL_WORKER_ROLES',
      'The stages a `trawl worker` process runs: `fetch` (gate, robots.txt, fetch, store the body, hand the page off), `process` (parse, fingerprint, duplicates, discover links, record), `render` (headless Chromium, as TRAWL_RENDER says), or several (`fetch,process,render`, the default: pages are rendered in the fetch stage). Run them apart when processing needs more cores than fetching: e.g. 2 fetch-only and 6 process-only workers. A fetch stage without `render` never starts a browser: the pages it would render are handed, with their host still held, to a render stage (a worker with `render` and without `fetch`), or processed unrendered when no render stage is alive.',
    ),
    heartbeatMs: set(
      int(300, 600_000).default(3000),
      'TRAWL_WORKER_HEARTBEAT_MS',
      'Workers heartbeat in Redis (every third of this); partitions are spread evenly over the live ones, each keeping its partitions while others come and go (domain affinity). A worker silent for this long drops out: its partitions move to the others, and the first worker to notice frees what it held (its URLs go back to the frontier, its hosts are due again after their delay, its process stage\'s pages are claimed by another). Longer than any pause of a worker\'s event loop, or a paused worker loses its jobs.',
    ),
    contactUrl: set(
      url(['http:', 'https:']).default('https://github.com/trawl-crawler/trawl'),
      'TRAWL_CONTACT_URL',
      'Where a site owner learns who runs this crawl and how to reach them (a page with an e-mail address or a form): named in the User-Agent, `<TRAWL_ROBOTS_TOKEN>/0.1 (+<this URL>)`. Set it to your own page for any crawl of sites you do not own.',
    ),
    userAgent: set(str().optional(), 'TRAWL_USER_AGENT', 'The whole User-Agent header, instead of the one built from TRAWL_ROBOTS_TOKEN and TRAWL_CONTACT_URL (keep the product token first, so sites can address trawl in robots.txt).'),
    attempts: set(int(1, 50).default(4), 'TRAWL_ATTEMPTS', 'Tries per URL for transient failures (timeouts, resets, 5xx) before it is dead-lettered.'),
    dlqMax: set(int(1).default(100_000), 'TRAWL_DLQ_MAX', 'Dead letters (BullMQ failed jobs) kept per fetch queue (partition); beyond it the oldest are removed, as are any older than 30 days.'),
    timeoutAttempts: set(int(1, 50).default(2), 'TRAWL_TIMEOUT_ATTEMPTS', 'Tries per URL when the last one timed out (each held its host for up to TRAWL_FETCH_DEADLINE_MS); at most TRAWL_ATTEMPTS.'),
    retryBaseMs: set(int(0).default(5000), 'TRAWL_RETRY_BASE_MS', 'First retry delay; doubles per attempt, with jitter.'),
    retryMaxMs: set(int(0).default(600_000), 'TRAWL_RETRY_MAX_MS', 'Longest retry delay.'),
    leaseMs: set(int(1000).default(300_000), 'TRAWL_LEASE_MS', 'How long a dispatched URL may stay out before it is returned to the frontier (covers dead workers and dispatchers).'),
    stalledMs: set(int(1000).default(30_000), 'TRAWL_STALLED_MS', 'BullMQ job lock duration: a job whose worker stops renewing it for this long is handed to another worker.'),
    drainTimeoutMs: set(int(0).default(30_000), 'TRAWL_DRAIN_TIMEOUT_MS', 'On SIGTERM, how long in-flight jobs may take to finish before the process exits anyway (their leases return them).'),
    contentDir: set(str().default('.trawl/content'), 'TRAWL_CONTENT_DIR', 'Where page bodies are stored (content-addressed, compressed as TRAWL_CONTENT_COMPRESSION says).'),
    contentCompression: set(
      oneOf(['brotli', 'gzip']).default('brotli'),
      'TRAWL_CONTENT_COMPRESSION',
      'How stored bodies and texts are compressed (local and S3): `brotli` (`<sha256>.br`) or `gzip` (`<sha256>.gz`, for tools that read only gzip). Brotli at quality 1 compresses a realistic 57 KB page in about half the CPU of gzip level 1, to a slightly smaller file. Every store reads both, so the setting can change between runs.',
    ),
    contentBrotliQuality: set(
      int(0, 11).default(1),
      'TRAWL_CONTENT_BROTLI_QUALITY',
      'Brotli quality of stored bodies and texts (0–11) under TRAWL_CONTENT_COMPRESSION=brotli. 1, the default, compresses a 57 KB page in ~0.4 ms of CPU to 41 % of its size; 2 takes ~0.7 ms for 39 %. A crawler runs out of cores long before disk; raise it when storage costs more than cores.',
    ),
    contentGzipLevel: set(
      int(0, 9).default(1),
      'TRAWL_CONTENT_GZIP_LEVEL',
      'zlib level of stored bodies and texts under TRAWL_CONTENT_COMPRESSION=gzip. 1, the default, compresses a 57 KB page in ~0.7 ms of CPU to 42 % of its size; 6 (zlib\'s own default) takes about twice as long for a few per cent less.',
    ),
    contentStoreText: set(
      bool().default(false),
      'TRAWL_CONTENT_STORE_TEXT',
      'Also store each page\'s extracted text in the content store, beside its body. Off by default: the text is exactly what extracting the stored body (or rendered DOM) again gives, so `trawl export pages` derives it when it reads the page, and the crawl saves the second object per page (about 0.5–1 ms of CPU on a 40 KB text). A page whose body is not kept (a near-duplicate under TRAWL_NEAR_DUP_STORE_BODY=false) has its text stored anyway. On: every page\'s text is stored too (its key in `crawled_pages.text_key`), for readers of the store that do not go through trawl.',
    ),
    contentFsync: set(bool().default(false), 'TRAWL_CONTENT_FSYNC', 'fsync every stored body before it is renamed into place. Off: a killed process still never leaves a partial body (the rename is atomic), but a power cut can lose the last seconds of bodies (their pages are re-fetched by the next re-crawl). On costs a disk flush per page.'),
  }),

  store: z
    .object({
      backend: set(oneOf(['local', 's3']).default('local'), 'TRAWL_CONTENT_STORE', 'Where page bodies go: a local directory (TRAWL_CONTENT_DIR) or an S3-compatible bucket. Both use the same keys, hashes and compressed bytes, so a crawl can move from one to the other by copying the files.'),
      s3Bucket: set(str().optional(), 'TRAWL_S3_BUCKET', 'The bucket for TRAWL_CONTENT_STORE=s3 (required then; checked at start: a missing bucket or refused credentials stop the process). Credentials come from the AWS SDK\'s own chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, instance roles).'),
      s3Prefix: set(z.string().trim().default(''), 'TRAWL_S3_PREFIX', 'Key prefix inside the bucket (e.g. `crawl-1/`); bodies sit at `<prefix><h0h1>/<sha256>.br` (`.gz` under gzip), the local store\'s layout.'),
      s3Endpoint: set(url(['http:', 'https:']).optional(), 'TRAWL_S3_ENDPOINT', 'An S3-compatible endpoint (MinIO, Ceph, R2, …). Unset: AWS S3.'),
      s3Region: set(str().optional(), 'TRAWL_S3_REGION', 'The bucket\'s region. Unset: the AWS SDK\'s chain (AWS_REGION, ~/.aws/config).'),
      s3ForcePathStyle: set(bool().default(false), 'TRAWL_S3_FORCE_PATH_STYLE', 'Path-style requests (`endpoint/bucket/key`), which most S3-compatible servers need; AWS itself uses virtual-hosted style.'),
      s3MaxAttempts: set(int(1, 20).default(4), 'TRAWL_S3_MAX_ATTEMPTS', 'Tries per S3 request for transient failures (throttling, 5xx, resets, timeouts), with exponential back-off and jitter; then the page\'s job is retried later.'),
    })
    .superRefine((store, ctx) => {
      if (store.backend === 's3' && store.s3Bucket === undefined) {
        ctx.addIssue({ code: 'custom', path: ['s3Bucket'], message: 'required when TRAWL_CONTENT_STORE=s3' });
      }
    }),

  dedup: z.object({
    nearDupDistance: set(int(0, 3).default(3), 'TRAWL_NEAR_DUP_DISTANCE', 'A page whose 64-bit SimHash (of its visible text) is within this many bits of an earlier page\'s is recorded as its near-duplicate (`duplicate_of`, `duplicate_kind = near`). 3 is the value measured for web pages by Manku et al. (WWW 2007); 0 only matches identical fingerprints. At most 3: the index finds matches through four 16-bit bands.'),
    nearDupStoreBody: set(bool().default(true), 'TRAWL_NEAR_DUP_STORE_BODY', 'Store the bodies of near-duplicates. On by default: a near-duplicate still differs (a date, a price, a session id) and an archive must hold what was served; a body dropped is lost for good, while storing it costs only disk (exact duplicates are stored once anyway). A search-only crawl can turn it off.'),
    nearDupFollowLinks: set(bool().default(true), 'TRAWL_NEAR_DUP_FOLLOW_LINKS', 'Follow the links of duplicate pages (near and exact). On by default: near-duplicates often differ precisely in their links (pagination, mirrors with their own navigation), and every link still passes the seen-set, scope and trap checks, so following costs little while not following can leave pages unreached. (An exact duplicate\'s body is always stored: the store already holds those bytes.)'),
  }),

  warc: z.object({
    write: set(bool().default(false), 'TRAWL_WARC_WRITE', 'Also write every fetch to WARC/1.1 files while crawling (response and request records; revisit records for 304s and bodies already archived), each worker process its own files in TRAWL_WARC_DIR. Off by default: the content store already keeps every body, and `trawl export warc` writes WARCs from it later.'),
    dir: set(str().default('.trawl/warc'), 'TRAWL_WARC_DIR', 'Where WARC files and their CDXJ indexes go (TRAWL_WARC_WRITE, and `trawl export warc` unless --out says otherwise).'),
    prefix: set(z.string().trim().regex(/^[A-Za-z0-9_-]{1,64}$/, 'expected letters, digits, _ and - (at most 64)').default('trawl'), 'TRAWL_WARC_PREFIX', 'First part of WARC file names: `<prefix>-<timestamp>-<serial>-<host>-<pid>.warc.gz`.'),
    maxFileBytes: set(int(1024 * 1024).default(1_000_000_000), 'TRAWL_WARC_MAX_FILE_BYTES', 'A WARC file is closed and the next one started once it reaches this size (the usual 1 GB; records are never split).'),
  }),

  render: z.object({
    mode: set(oneOf(['never', 'auto', 'always']).default('auto'), 'TRAWL_RENDER', 'Render pages in headless Chromium before their links are read: `never`; `always` (every HTML page); `auto`, the pages that look built by scripts (an empty app root, next to no text, a `<noscript>` asking for JavaScript, an inline script writing links) plus a sample of each host\'s pages (never a page whose scripts would not run: only other hosts\' while TRAWL_RENDER_OTHER_HOSTS is off, and inline code that touches nothing), after which a host is rendered only if the browser found materially more links or text there (TRAWL_RENDER_SAMPLE_PAGES, TRAWL_RENDER_MIN_EXTRA_LINKS, TRAWL_RENDER_MIN_LINK_GAIN). Every request the page makes goes through trawl\'s fetcher (the host gate, the SSRF guard); the browser never connects by itself.'),
    chromiumPath: set(str().default('/usr/bin/chromium'), 'TRAWL_RENDER_CHROMIUM', 'The Chromium executable (Debian\'s `chromium` package; never a downloaded browser build).'),
    maxOpenPages: set(int(1, 64).default(2), 'TRAWL_RENDER_CONCURRENCY', 'Pages rendering at once per process; more wait their turn. A render costs a few hundred ms of CPU (about 80 times a plain fetch and parse): size it to the cores.'),
    timeoutMs: set(int(100).default(15_000), 'TRAWL_RENDER_TIMEOUT_MS', 'A page not settled this long after it opened is given up (ERR_RENDER_TIMEOUT); its fetched HTML is kept.'),
    idleMs: set(int(0, 10_000).default(100), 'TRAWL_RENDER_IDLE_MS', 'After the load event, a page is settled once no request has been in flight for this long.'),
    pagesPerBrowser: set(int(1).default(200), 'TRAWL_RENDER_PAGES_PER_BROWSER', 'A browser is replaced after this many pages.'),
    maxBrowserMemoryBytes: set(int(0).default(1024 * 1024 * 1024), 'TRAWL_RENDER_MAX_BROWSER_MEMORY_BYTES', 'A browser is replaced once its processes\' memory (PSS from /proc, else RSS) is over this. 0: never look; where /proc cannot be read the limit is not enforced.'),
    contextScope: set(oneOf(['host', 'page']).default('host'), 'TRAWL_RENDER_CONTEXT', '`host`: one browser context per host, its page kept between renders; `page`: a fresh context for every render (no cookies or storage carried over, about five times the CPU).'),
    allowOtherHosts: set(bool().default(false), 'TRAWL_RENDER_OTHER_HOSTS', 'Let a rendered page load scripts, styles and data from other hosts (CDNs, APIs). Off: only the page\'s own host, and TRAWL_RENDER_ALLOW_HOSTS. Images, media and fonts are never fetched. In a crawl each such request makes one try of the other host\'s gate, never a wait: it is fetched only if nothing of the fleet is fetching from that host and the host is due within 250 ms, under that host\'s robots.txt (with no fresh copy cached, the turn fetches it and the request waits for a later page), Crawl-delay, back-off and address group (TRAWL_POLITENESS_KEY, asked once, never waited for), and the host is then due its delay after the response; otherwise it is refused at once and named in the page\'s render reason. A busy CDN host is mostly refused (the subresource cache keeps what one page got).'),
    allowHosts: set(list().default([]), 'TRAWL_RENDER_ALLOW_HOSTS', 'Other hosts a rendered page may load from even with TRAWL_RENDER_OTHER_HOSTS off (comma-separated, `host` or `host:port`); each request borrows that host\'s gate as TRAWL_RENDER_OTHER_HOSTS describes, or is refused.'),
    maxRequestsPerPage: set(int(1).default(200), 'TRAWL_RENDER_MAX_REQUESTS', 'Requests one page may make; later ones are refused.'),
    cacheBytes: set(int(0).default(64 * 1024 * 1024), 'TRAWL_RENDER_CACHE_BYTES', 'Scripts and stylesheets kept in memory for the crawl\'s other pages (a site\'s app.js is fetched once).'),
    samplePages: set(int(0, 100).default(3), 'TRAWL_RENDER_SAMPLE_PAGES', 'With TRAWL_RENDER=auto: pages of each host with scripts rendered, at most, to learn whether rendering it pays (0: only the page\'s own signals decide). One at a time: the host\'s first page with scripts, then the next page after a sample that gained, or TRAWL_RENDER_SAMPLE_SPACING pages after one that found nothing; the verdict falls as soon as the samples left could not change it (on a site whose scripts add nothing: two renders). Counted for the whole crawl (the tally and verdict are kept in Redis): every worker, and each restart, shares them.'),
    sampleSpacing: set(int(0, 100_000).default(10), 'TRAWL_RENDER_SAMPLE_SPACING', 'With TRAWL_RENDER=auto: after a sample in which the browser found nothing more, this many more of the host\'s pages pass unrendered before the next sample (0: the next page). A render costs tens of times an HTTP page: this keeps the samples of sites whose scripts add nothing to about one in this many pages.'),
    minExtraLinks: set(int(1).default(3), 'TRAWL_RENDER_MIN_EXTRA_LINKS', 'A sample gains when the browser finds at least this many links its HTML did not have…'),
    minLinkGain: set(num(0, 100).default(0.2), 'TRAWL_RENDER_MIN_LINK_GAIN', '…and they are at least this share of the HTML\'s links (0.2: a fifth more). A host keeps being rendered when half its samples gained.'),
    reviewAfterMs: set(int(0).default(6 * 3_600_000), 'TRAWL_RENDER_REVIEW_AFTER_MS', 'How long a host\'s verdict stands before it is sampled again (by whichever worker fetches the host next).'),
  }),

  fetch: z.object({
    connectTimeoutMs: set(int(1).default(10_000), 'TRAWL_CONNECT_TIMEOUT_MS', 'DNS lookup plus TCP/TLS connect.'),
    firstByteTimeoutMs: set(int(1).default(20_000), 'TRAWL_FIRST_BYTE_TIMEOUT_MS', 'From request sent to response headers.'),
    idleTimeoutMs: set(int(1).default(20_000), 'TRAWL_IDLE_TIMEOUT_MS', 'Longest silence on the socket while reading.'),
    deadlineMs: set(int(1).default(60_000), 'TRAWL_FETCH_DEADLINE_MS', 'Total time one fetch may take, whatever the server does.'),
    maxBodyBytes: set(int(1024).default(10 * 1024 * 1024), 'TRAWL_MAX_BODY_BYTES', 'Body cap (decoded bytes); longer bodies are truncated, kept and parsed.'),
    allowNetworks: set(cidrList().default([]), 'TRAWL_ALLOW_NETWORKS', 'CIDR ranges that may be fetched although private: the SSRF guard refuses loopback, private, link-local, CGNAT, multicast, reserved and cloud-metadata addresses otherwise (e.g. 127.0.0.0/8 for the synthetic web, or an intranet). An entry opens every port unless it names some: `10.0.0.5:8080`, `10.1.0.0/16:8000-8099`, `[fd00::/8]:443` (checked on the connected socket).'),
    signatureKeyFile: set(
      str().optional(),
      'TRAWL_SIGNATURE_KEY_FILE',
      'Opt-in Web Bot Auth: an Ed25519 private key (PEM, PKCS#8) every request is signed with, as HTTP Message Signatures (RFC 9421) covering the authority and Signature-Agent, valid 60 s. Unset: requests are not signed. Make one with `openssl genpkey -algorithm ed25519 -out trawl-signing.pem`.',
    ),
    signatureAgentUrl: set(
      url(['https:', 'http:']).optional(),
      'TRAWL_SIGNATURE_AGENT_URL',
      'With TRAWL_SIGNATURE_KEY_FILE: the origin whose /.well-known/http-message-signatures-directory serves trawl\'s public key (the dashboard serves it), sent and signed as Signature-Agent. Unset: no Signature-Agent.',
    ),
    hostsFile: set(str().optional(), 'TRAWL_HOSTS_FILE', 'A hosts(5) file of static name → address entries answered before DNS (staging pins, the synthetic web\'s named hosts); the SSRF guard still applies.'),
    dnsMaxTtlS: set(int(0).default(3600), 'TRAWL_DNS_MAX_TTL_S', 'DNS answers are cached for their TTL, at most this long.'),
    dnsErrorTtlMs: set(int(0).default(3_600_000), 'TRAWL_DNS_ERROR_TTL_MS', 'A DNS "no such host" (NXDOMAIN, no records) is cached this long; transient failures (SERVFAIL, timeouts) only 2 s, so the retries that follow can succeed.'),
    proxyUrls: set(
      proxyUrls().prefault(''),
      'TRAWL_PROXY_URLS',
      'Proxies the fetcher may connect through, comma-separated, each `name=URL` (or just the URL, named by its position 1, 2, …): `http://` and `https://` proxies tunnel every request with CONNECT (plain http:// pages too, so the proxy must allow CONNECT to ports 80 and 443), `socks5://` ones are SOCKS5; credentials go in the URL (`http://user:password@host:3128`) and are never logged or shown. The proxy\'s own address passes the SSRF guard like any connection: a private one must be in TRAWL_ALLOW_NETWORKS. Unset: every request goes direct.',
      { secret: true, show: (value) => (value as ProxyEntry[]).map((entry) => `${entry.name}=${redactProxyUrl(entry.url)}`) },
    ),
    proxyTiers: set(
      proxyTiers().prefault(''),
      'TRAWL_PROXY_TIERS',
      'Ordered groups of proxies, separated by `;`, each `name=members` (or just the members, named by position) with members comma-separated proxy names or `none` (the direct connection): `direct=none;dc=dc1,dc2;res=res1`. A host uses the first tier unless TRAWL_PROXY_RULES says otherwise, and one member of it at a time (chosen by consistent hashing on the host). Unset: all of TRAWL_PROXY_URLS form one tier, named `1`.',
    ),
    proxyRules: set(
      proxyRules().prefault(''),
      'TRAWL_PROXY_RULES',
      'Per-host and per-domain proxy tiers, comma-separated `domain=tier` (`example.com=none,shop.example=dc`): a domain covers its subdomains, the longest match wins, and `none` means never proxied.',
    ),
    proxySessionRequests: set(int(0).default(0), 'TRAWL_PROXY_SESSION_REQUESTS', 'A host keeps its proxy for this many requests (counted in each worker process), then consistent hashing picks again, maybe another member of its tier. 0: no limit.'),
    proxySessionMinutes: set(int(0).default(0), 'TRAWL_PROXY_SESSION_MINUTES', 'A host keeps its proxy for this long (every process agrees on when a host\'s session turns over; hosts turn over at different times), then consistent hashing picks again. 0: no limit (with TRAWL_PROXY_SESSION_REQUESTS 0 too, a host keeps its proxy while it works).'),
    proxyBackoffBaseMs: set(int(100).default(30_000), 'TRAWL_PROXY_BACKOFF_BASE_MS', 'A proxy that fails (refused, reset or timed out connecting, 407, a refused tunnel) is taken out of its tier for this long, doubling per consecutive failure; its hosts move to another member of the tier meanwhile (the failed request is tried there at once: the target was never reached).'),
    proxyBackoffMaxMs: set(int(100).default(600_000), 'TRAWL_PROXY_BACKOFF_MAX_MS', 'Longest time a failing proxy is taken out.'),
  }),

  process: z.object({
    thread: set(
      bool().default(true),
      'TRAWL_PROCESS_THREAD',
      'When one process runs both stages (`trawl crawl`, or a worker with `fetch,process`), run the process stage on a thread of its own, with its own connections, so parsing and recording pages never delay the timers that start polite fetches. `false`: both stages share the event loop.',
    ),
    concurrency: set(int(1, 10_000).default(64), 'TRAWL_PROCESS_CONCURRENCY', 'Pages one process stage works on at once (most of that time is spent waiting for batched writes).'),
    claimMs: set(
      int(1000).default(10_000),
      'TRAWL_PROCESS_CLAIM_MS',
      'A handed-off page held this long by a process stage that neither recorded it nor said it still works on it (the stage died, or a try failed) is claimed by another process stage; also the wait before a failed page is tried again.',
    ),
    nice: set(
      int(0, 19).default(10),
      'TRAWL_PROCESS_NICE',
      'OS priority (nice, 0–19) of the work that never starts a fetch: the process stage (its thread, or a whole process-only worker), page analysis, and compressing and writing bodies. Linux gives each thread its own value, so when the cores are short the event loop that starts polite fetches runs first and processing catches up behind it (backpressure bounds the backlog). 0: every thread at the process\'s priority. Ignored on other systems.',
    ),
    backlogMax: set(
      int(1).default(2000),
      'TRAWL_PROCESS_BACKLOG_MAX',
      'Backpressure: when this many pages of a partition wait for (or are in) the process stage, the dispatcher stops handing out that partition\'s URLs; below it, it hands out fewer the deeper the backlog. Politeness is unaffected: it only slows fetching.',
    ),
  }),

  dispatch: z.object({
    window: set(int(1, 100_000).default(256), 'TRAWL_DISPATCH_WINDOW', 'Jobs waiting for a worker in a partition (its ready list and fetch queue) at most; the dispatcher claims more only below it.'),
    bands: set(int(1, 16).default(4), 'TRAWL_PRIORITY_BANDS', 'Priority bands per host back queue.'),
    priorityWeights: set(
      priorityWeights(),
      'TRAWL_PRIORITY_WEIGHTS',
      'What priorities are made of, as `name=value` pairs (0..1; names left out keep their default), see docs/priority.md. Across hosts, a host\'s score is the weighted mean of `authority` (distinct hosts linking to it) and `seed` (its seeds\' priority). Within a host, a link on a seed page gets priority 0.5, `depth` less per level below that; a URL a sitemap names gets `sitemap`; a link found new on a re-crawled page gets `fresh` more. Default `authority=0.5,seed=0.5,depth=0.1,sitemap=0.6,fresh=0.25`; a news crawl: `authority=0.3,seed=0.7,depth=0.15,sitemap=0.8,fresh=0.5`.',
    ),
    hostRankLeadMs: set(
      int(0, 86_400_000).default(60_000),
      'TRAWL_HOST_RANK_LEAD_MS',
      'When more hosts are due than the dispatcher may claim, a host of score 1 (TRAWL_PRIORITY_WEIGHTS) goes ahead of hosts due up to this long before it, a host of score s s × this; a host that has waited longer than this past its due time goes before every host just due, whatever the scores, so none starves. Never before a host\'s due time. 0: hosts are served by due time alone.',
    ),
    hostRankWindow: set(
      int(1, 100).default(4),
      'TRAWL_HOST_RANK_WINDOW',
      'Hosts the dispatcher ranks per claim, as a multiple of the hosts it claims: the earliest-due ones, at most 2,048 (ranking runs inside Redis, which serves nothing else meanwhile). Larger finds high-score hosts further back in due order; each claim costs O(limit × this × log n).',
    ),
    leadMs: set(int(0, 1000).default(30), 'TRAWL_DISPATCH_LEAD_MS', 'Hosts due within this long are dispatched already; their jobs wait at the host gate, which alone decides when the fetch starts. Takes queue pickup latency off the politeness clock.'),
    idleHostTtlMs: set(
      int(0).default(86_400_000),
      'TRAWL_IDLE_HOST_TTL_MS',
      'A host with nothing queued and no URL out has its Redis state (due time, back-off, URL and query-variant counts) expire after this long, so the hosts of a broad crawl do not stay in Redis forever; its budgets then count afresh. 0: never. At least the longest wait a URL can be in (TRAWL_BACKOFF_MAX_MS, TRAWL_MAX_RETRY_AFTER_MS, TRAWL_RETRY_MAX_MS, TRAWL_MAX_DELAY_MS) plus TRAWL_LEASE_MS.',
    ),
    redisMaxUrls: set(
      int(0).default(0),
      'TRAWL_FRONTIER_REDIS_MAX_URLS',
      'The most queued URLs the frontier keeps in Redis (about 88 bytes each), over all partitions (each takes an equal share). Past it, newly queued URLs wait in PostgreSQL (`urls` rows still `queued`, with their band and entry), and each host\'s best of them — highest band, then discovery order — are paged back into Redis as its back queue runs low, ahead of need. Each host keeps TRAWL_FRONTIER_HOST_HEAD_URLS in Redis whatever the cap, and a URL that outranks its host\'s lowest in Redis goes there too while the host holds under twice that (so priority holds): Redis holds at most the cap plus about twice the head per host with work. Re-crawls spill like discoveries; sitemaps and operator refreshes never spill. Seed admission (TRAWL_FRONTIER_MAX_QUEUED) counts spilled URLs as queued: raise it too to let the frontier grow past Redis. 0: no limit, every queued URL is in Redis. Set it alike on every process.',
    ),
    hostHeadUrls: set(
      int(1, 10_000).default(16),
      'TRAWL_FRONTIER_HOST_HEAD_URLS',
      'With TRAWL_FRONTIER_REDIS_MAX_URLS: URLs of each host kept in Redis past the cap, so no host waits for a refill; a host with URLs in PostgreSQL is refilled up to this many once it has half of it or fewer queued in Redis.',
    ),
    maxQueued: set(
      int(0).optional(),
      'TRAWL_FRONTIER_MAX_QUEUED',
      'Seed admission: at this many URLs queued in the frontier, seeds stop entering it — the schedulers leave the `seeds` queue\'s jobs waiting, `POST /v1/crawl/seeds` answers 429 with Retry-After, `trawl seed` says it waits — until the frontier drains below 90 % of it. Discovered links still enter (and are recorded in PostgreSQL whatever the frontier holds). 0: no limit. Unset: one day of one worker\'s polite capacity, TRAWL_CONCURRENCY fetches every TRAWL_MIN_DELAY_MS (32 × 86,400 = 2,764,800 by default, about 240 MB of Redis): more queued than that cannot be fetched within a day by the smallest crawl, so it only costs memory. Set it on the schedulers (all alike): dashboards and `trawl seed` follow the threshold the schedulers record.',
    ),
  }),

  recrawl: z.object({
    enabled: set(bool().default(true), 'TRAWL_RECRAWL', 'Re-crawl pages when they come due (the scheduler\'s sweep). Off: every page is fetched once.'),
    minIntervalS: set(int(1).default(3600), 'TRAWL_RECRAWL_MIN_INTERVAL_S', 'Shortest time between two visits of a page, however often it changes.'),
    maxIntervalS: set(int(1).default(2_592_000), 'TRAWL_RECRAWL_MAX_INTERVAL_S', 'Longest time a page goes unchecked, however static it looks (it is due then whatever its estimate says).'),
    initialIntervalS: set(int(1).default(86_400), 'TRAWL_RECRAWL_INITIAL_INTERVAL_S', 'When a page seen for the first time is visited again (clamped to the min and max).'),
    revisitFraction: set(num(0.01, 1).default(0.5), 'TRAWL_RECRAWL_REVISIT_FRACTION', 'Revisit at this fraction of the page\'s estimated mean change interval (lower: fresher copies, more fetches).'),
    decay: set(num(0.5, 1).default(0.95), 'TRAWL_RECRAWL_DECAY', 'Weight older visits keep per new visit in the change-rate estimate (about 1/(1−d) visits remembered).'),
    failureBaseS: set(int(1).default(3600), 'TRAWL_RECRAWL_FAILURE_BASE_S', 'After a visit that failed for good (retries spent), try the page again after this long, doubling per consecutive failure.'),
    failureMaxS: set(int(1).default(604_800), 'TRAWL_RECRAWL_FAILURE_MAX_S', 'Longest re-crawl back-off of a failing page.'),
    goneIntervalS: set(int(1).default(2_592_000), 'TRAWL_RECRAWL_GONE_INTERVAL_S', 'Revisit interval of a page that is gone (404/410), moved for good (301/308) or refused.'),
    sweepIntervalS: set(num(0.1, 86_400).default(60), 'TRAWL_RECRAWL_SWEEP_INTERVAL_S', 'How often the scheduler looks for due pages (a BullMQ job scheduler: one sweep at a time across all schedulers).'),
    sweepBatch: set(int(1, 100_000).default(5000), 'TRAWL_RECRAWL_SWEEP_BATCH', 'Due pages pushed back into the frontier per sweep at most.'),
    perHost: set(int(1, 100_000).default(200), 'TRAWL_RECRAWL_SWEEP_PER_HOST', 'Due pages of one host pushed per sweep at most, so a host with a flood of due pages cannot crowd out the others.'),
  }),

  sitemaps: z.object({
    enabled: set(bool().default(true), 'TRAWL_SITEMAPS', 'Read sitemaps (robots.txt `Sitemap:` lines and /sitemap.xml): unknown URLs are discovered, and a `<lastmod>` newer than a page\'s last visit makes it due now.'),
    refreshIntervalS: set(num(0.1, 31_536_000).default(86_400), 'TRAWL_SITEMAP_REFRESH_INTERVAL_S', 'How often each sitemap is fetched again (through the host gate like any fetch).'),
    sweepIntervalS: set(num(0.1, 86_400).default(300), 'TRAWL_SITEMAP_SWEEP_INTERVAL_S', 'How often the scheduler looks for sitemaps due for a refresh.'),
    guess: set(bool().default(false), 'TRAWL_SITEMAP_GUESS', 'Also fetch /sitemap.xml of origins whose robots.txt names no sitemap. Off by default: it costs every host a request (a politeness turn) that usually finds nothing.'),
    maxEntries: set(int(1, 1_000_000).default(50_000), 'TRAWL_SITEMAP_MAX_ENTRIES', 'Entries read from one sitemap file at most (the sitemaps.org limit is 50,000).'),
  }),

  scheduler: z.object({
    leaseMs: set(int(500, 600_000).default(10_000), 'TRAWL_SCHEDULER_LEASE_MS', 'A scheduler owns each of its frontier partitions for this long and renews every third of it; when it dies, another scheduler takes its partitions within about this long.'),
    repairEveryMs: set(int(100).default(30_000), 'TRAWL_REPAIR_EVERY_MS', 'How often the scheduler owning partition 0 pushes URLs a crash left recorded but never queued (older than twice `TRAWL_LEASE_MS`).'),
    autoRebuild: set(
      bool().default(false),
      'TRAWL_AUTO_REBUILD',
      'When Redis has lost the crawl\'s data (a FLUSHALL, a restart without persistence), the schedulers rebuild it from PostgreSQL themselves, at once, as `trawl frontier rebuild` would (several schedulers join one rebuild). Off by default: an operator may prefer to restore a Redis backup first.',
    ),
  }),

  db: z.object({
    retryMs: set(
      int(0).default(120_000),
      'TRAWL_DB_RETRY_MS',
      'How long a statement is retried while PostgreSQL is unreachable or restarting (connection refused or lost, shutting down, starting up; serialization failures and deadlocks too), with back-off up to 2 s, before its error reaches the caller. A fetched page waits for its record instead of being fetched again. 0: no retries.',
    ),
  }),

  seen: z.object({
    backend: set(oneOf(['auto', 'redisbloom', 'lua']).default('auto'), 'TRAWL_SEEN_BACKEND', 'Bloom filter backend. auto: RedisBloom (BF.*) if the server has it, else a Lua bitmap filter. Chosen once per namespace by its first process and recorded in Redis (`<namespace>:settings`); later processes follow the record, and one set to a different backend stops at start.'),
    capacity: set(int(1000).default(10_000_000), 'TRAWL_SEEN_CAPACITY', 'Expected distinct URLs before the filter adds a layer.'),
    errorRate: set(num(0.000001, 0.5).default(0.01), 'TRAWL_SEEN_ERROR_RATE', 'Bloom false-positive target (false positives are confirmed in PostgreSQL, never dropped).'),
    shards: set(int(1, 256).default(1), 'TRAWL_SEEN_SHARDS', 'Independent filters (Redis Cluster slots) the seen-set is split over.'),
    snapshotIntervalS: set(
      int(0).default(300),
      'TRAWL_SEEN_SNAPSHOT_INTERVAL_S',
      'How often one scheduler copies the seen-set\'s Bloom filter to the content store (`seen-snapshots/<namespace>/`), with the highest URL id it covers, so a rebuild after Redis lost the crawl loads it and adds only the URLs recorded since, instead of every URL. 0: no snapshots (a rebuild still loads one that exists).',
    ),
    snapshotKeep: set(int(1, 100).default(3), 'TRAWL_SEEN_SNAPSHOT_KEEP', 'Seen-set snapshots kept: older ones are deleted once a newer one is complete.'),
  }),

  dashboard: z.object({
    apiTokens: set(
      list().pipe(z.array(z.string().min(16, 'each token must be at least 16 characters').max(512, 'each token must be at most 512 characters'))).default([]),
      'TRAWL_API_TOKENS',
      'Bearer tokens of the dashboard and its REST API (comma-separated, each ≥ 16 characters); a browser signs in with one. Unset: the dashboard runs only on a loopback address, with a token it writes to TRAWL_DASHBOARD_TOKEN_FILE.',
      { secret: true },
    ),
    readTokens: set(
      list().pipe(z.array(z.string().min(16, 'each token must be at least 16 characters').max(512, 'each token must be at most 512 characters'))).default([]),
      'TRAWL_API_READ_TOKENS',
      'Read-only bearer tokens (comma-separated, each ≥ 16 characters): they (and a browser signed in with one) may GET every page, the API and /metrics, but never write (pause, seeds, refresh, bull-board\'s actions: 403). For Prometheus and for people who only watch.',
      { secret: true },
    ),
    host: set(str().default('127.0.0.1'), 'TRAWL_DASHBOARD_HOST', 'Address `trawl dashboard` listens on. Anything but a loopback address needs TRAWL_API_TOKENS.'),
    port: set(int(0, 65_535).default(8930), 'TRAWL_DASHBOARD_PORT', 'Port `trawl dashboard` listens on (0: any free port).'),
    tokenFile: set(str().default('.trawl/dashboard.token'), 'TRAWL_DASHBOARD_TOKEN_FILE', 'Without TRAWL_API_TOKENS, the dashboard (on loopback only) signs in with a random token it writes here (mode 0600) at start.'),
    sessionTtlMs: set(int(60_000).default(12 * 3_600_000), 'TRAWL_SESSION_TTL_MS', 'How long a browser sign-in lasts (the signed session cookie expires then).'),
    rateLimitPerMinute: set(int(1).default(600), 'TRAWL_API_RATE_LIMIT', 'Requests per minute one token (or one address, before signing in) may make to the dashboard; more are answered 429.'),
    bodyLimitBytes: set(int(1024, 64 * 1024 * 1024).default(1024 * 1024), 'TRAWL_API_BODY_LIMIT_BYTES', 'Largest request body the dashboard accepts; larger ones are answered 413.'),
    headersTimeoutMs: set(int(100, 600_000).default(10_000), 'TRAWL_API_HEADERS_TIMEOUT_MS', 'A client must send a request\'s headers within this long, or the dashboard answers 408 and closes the connection.'),
    requestTimeoutMs: set(
      int(100, 3_600_000).default(30_000),
      'TRAWL_API_REQUEST_TIMEOUT_MS',
      'A client must send a whole request, headers and body, within this long (a body trickled in a byte at a time is cut off), or the dashboard answers 408 and closes the connection. At least TRAWL_API_HEADERS_TIMEOUT_MS.',
    ),
    idleTimeoutMs: set(int(100, 3_600_000).default(60_000), 'TRAWL_API_IDLE_TIMEOUT_MS', 'A connection on which nothing moves for this long is closed.'),
    allowedHosts: set(
      list().optional(),
      'TRAWL_DASHBOARD_ALLOWED_HOSTS',
      'Host names the dashboard answers to (comma-separated, the port aside; e.g. `trawl.example.com,localhost`): a request naming another host in its Host header is refused 421, a defence against DNS rebinding. Unset: on a loopback address only localhost, 127.0.0.1 and [::1]; on any other address every name (set it there).',
    ),
    maxSeedsPerRequest: set(
      int(1, 10_000).default(1000),
      'TRAWL_API_MAX_SEEDS',
      'URLs one POST /v1/crawl/seeds may carry (more: 413, nothing applied; send several requests). Seeds are applied in batches that let other requests through, but a request of 10,000 still holds its caller for seconds.',
    ),
    trustProxy: set(
      trustProxy().default(false),
      'TRAWL_TRUST_PROXY',
      'Behind a reverse proxy (TLS termination): which proxies\' X-Forwarded-For and X-Forwarded-Proto the dashboard believes, for the client\'s address (rate limits, failed sign-ins) and https (the session cookie is then `Secure`). false: none; true: any (only when clients reach the dashboard through the proxy alone); a number: that many proxy hops; or the proxies\' addresses and CIDR ranges, comma-separated (`10.0.0.0/8`, `127.0.0.1`).',
    ),
  }),

  metrics: z.object({
    port: set(int(0, 65_535).default(9464), 'TRAWL_METRICS_PORT', 'Port of the Prometheus /metrics and /healthz listener of `trawl worker` and `trawl scheduler` (0: none). The dashboard serves /metrics on its own port.'),
    host: set(str().default('127.0.0.1'), 'TRAWL_METRICS_HOST', 'Address the workers\' and schedulers\' metrics listener binds to.'),
    open: set(bool().default(false), 'TRAWL_METRICS_OPEN', 'true: /metrics answers without a token (for a Prometheus inside a trusted network). false: it needs `Authorization: Bearer` with one of TRAWL_API_TOKENS.'),
    topHosts: set(int(0, 1000).default(20), 'TRAWL_METRICS_TOP_HOSTS', 'Per-host metric series only for this many hosts (those with the most queued URLs), so label cardinality stays bounded.'),
  }),

  log: z.object({
    level: set(oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'), 'TRAWL_LOG_LEVEL', 'Log level (JSON lines on stderr).'),
  }),
}).superRefine((config, ctx) => {
  if (config.fetch.signatureAgentUrl !== undefined && config.fetch.signatureKeyFile === undefined) {
    ctx.addIssue({ code: 'custom', path: ['fetch', 'signatureAgentUrl'], message: 'a Signature-Agent names the directory of a signing key: set TRAWL_SIGNATURE_KEY_FILE too' });
  }
  for (const problem of proxyPlanProblems(config.fetch)) ctx.addIssue({ code: 'custom', path: ['fetch', problem.path], message: problem.message });
  if (config.dashboard.headersTimeoutMs > config.dashboard.requestTimeoutMs) {
    ctx.addIssue({ code: 'custom', path: ['dashboard', 'requestTimeoutMs'], message: 'must be at least TRAWL_API_HEADERS_TIMEOUT_MS (the headers are part of the request)' });
  }
  // REDIS_URL names one server, or (in cluster mode only) a cluster's seed nodes.
  const urls = config.redisUrl === undefined ? [] : splitList(config.redisUrl);
  if (config.redisCluster) {
    if (urls.length === 0) {
      ctx.addIssue({ code: 'custom', path: ['redisCluster'], message: 'a Redis Cluster needs REDIS_URL naming one or more of its nodes' });
    }
    const parsed = urls.map((u) => new URL(u));
    if (parsed.some((u) => !['', '/', '/0'].includes(u.pathname))) {
      ctx.addIssue({ code: 'custom', path: ['redisUrl'], message: 'a Redis Cluster has only database 0: drop the /<db> from the URL' });
    }
    const first = parsed[0];
    if (first && parsed.some((u) => u.protocol !== first.protocol || u.username !== first.username || u.password !== first.password)) {
      ctx.addIssue({ code: 'custom', path: ['redisUrl'], message: 'the seed nodes of one cluster must share scheme, user and password' });
    }
  } else if (urls.length > 1) {
    ctx.addIssue({ code: 'custom', path: ['redisUrl'], message: 'several URLs name the seed nodes of a Redis Cluster: set TRAWL_REDIS_CLUSTER=true, or give one server' });
  }
  // A lease must outlast the fetch it covers: one that runs out while the fetch may still be
  // going hands the URL to another worker (fetched twice), and a job waiting for a dead attempt's
  // host token (held up to the deadline plus the margin) would find its own lease gone.
  const leastLeaseMs = config.fetch.deadlineMs + FETCH_HOLD_MARGIN_MS;
  if (config.worker.leaseMs <= leastLeaseMs) {
    ctx.addIssue({
      code: 'custom',
      path: ['worker', 'leaseMs'],
      message: `must be longer than TRAWL_FETCH_DEADLINE_MS (${config.fetch.deadlineMs} ms) plus ${FETCH_HOLD_MARGIN_MS} ms, i.e. more than ${leastLeaseMs} ms: a lease that can run out during its fetch lets the URL be fetched twice (raise TRAWL_LEASE_MS or lower TRAWL_FETCH_DEADLINE_MS)`,
    });
  }
  const longestWaitMs = Math.max(config.politeness.backoffMaxMs, config.politeness.maxRetryAfterMs, config.worker.retryMaxMs, config.politeness.maxDelayMs) + config.worker.leaseMs;
  if (config.dispatch.idleHostTtlMs !== 0 && config.dispatch.idleHostTtlMs < longestWaitMs) {
    ctx.addIssue({
      code: 'custom',
      path: ['dispatch', 'idleHostTtlMs'],
      message: `must be 0 or at least ${longestWaitMs} ms (the longest of TRAWL_BACKOFF_MAX_MS, TRAWL_MAX_RETRY_AFTER_MS, TRAWL_RETRY_MAX_MS and TRAWL_MAX_DELAY_MS, plus TRAWL_LEASE_MS): a host must not forget its back-off while a URL of it still waits`,
    });
  }
});

export type Config = z.output<typeof configSchema>;
export type ConfigInput = z.input<typeof configSchema>;
export type CrawlPolicyConfig = Config['policy'];
export type WorkerConfig = Config['worker'];
export type FetchConfig = Config['fetch'];
export type DispatchConfig = Config['dispatch'];
export type SeenConfig = Config['seen'];
export type PolitenessConfig = Config['politeness'];
export type RobotsConfig = Config['robots'];
export type StoreConfig = Config['store'];
export type ProcessConfig = Config['process'];
export type DedupConfig = Config['dedup'];
export type WarcConfig = Config['warc'];
export type RenderConfig = Config['render'];
export type DashboardConfig = Config['dashboard'];
export type MetricsConfig = Config['metrics'];

/** The version the User-Agent names. */
const DAY_MS = 86_400_000;

/**
 * The frontier's seed admission threshold: TRAWL_FRONTIER_MAX_QUEUED, else one day of one
 * worker's polite capacity — each of its TRAWL_CONCURRENCY fetch slots busy with a host it may
 * ask once every TRAWL_MIN_DELAY_MS. The number of hosts, and so the crawl's real capacity, is
 * not known up front: this is the smallest crawl's day, which an operator raises with workers.
 */
export function frontierMaxQueued(config: Pick<Config, 'dispatch' | 'worker' | 'policy'>): number {
  return config.dispatch.maxQueued ?? config.worker.concurrency * Math.ceil(DAY_MS / Math.max(1, config.policy.minDelayMs));
}

export const CRAWLER_VERSION = '0.1';

/**
 * The User-Agent trawl sends: TRAWL_USER_AGENT when set, else the robots.txt product token with
 * the contact URL (`trawl/0.1 (+https://crawler.example/about)`), so a site owner reading a log
 * line knows which robots.txt group applies and where to turn.
 */
export function userAgentOf(config: Pick<Config, 'worker' | 'robots'>): string {
  return config.worker.userAgent ?? `${config.robots.productToken}/${CRAWLER_VERSION} (+${config.worker.contactUrl})`;
}

import { seedsJobSchema } from '@trawl/queue';
import { hostOf } from '@trawl/url';
import { z } from 'zod';

/** Every error the API answers: a stable code, a message, the problems one by one, the request's id. */
export const problemSchema = z
  .object({
    error: z.object({
      code: z.string().describe('Stable error code, e.g. ERR_VALIDATION, ERR_SEEDS_INVALID, ERR_NOT_FOUND, ERR_UNAUTHORIZED'),
      message: z.string(),
      details: z.array(z.string()).optional().describe('One entry per problem (a field, a URL)'),
    }),
    request_id: z.string(),
  })
  .meta({ id: 'Problem' });

const isoTime = z.string().describe('ISO 8601 time');
const nullableTime = isoTime.nullable();

/**
 * A host exactly as the crawl keys it: whatever the crawler accepts in a URL (WHATWG allows
 * `"'{}$` and more, and any length the URL limit allows) and nothing it would not write.
 */
export const isHostKey = (host: string): boolean => {
  try {
    return hostOf(`http://${host}/`) === host;
  } catch {
    return false;
  }
};

export const hostParams = z.object({
  host: z
    .string()
    .min(1)
    .max(65_536)
    .refine(isHostKey, 'expected a host name as the crawl writes it: lowercase, punycode, with :port when not the default')
    .describe('Host as the crawl keys it (lowercase, punycode, `:port` when not the default)'),
});

export const urlHashParams = z.object({
  url_hash: z.string().regex(/^[0-9a-f]{32}$/, 'expected 32 lowercase hex digits (the 16-byte URL fingerprint)').describe('Hex of the URL fingerprint (16 bytes)'),
});

export const seedsBody = seedsJobSchema.meta({ id: 'SeedsRequest' });

export const idempotencyKey = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces')
  .describe('Replays within 24 h return the original response and enqueue nothing');

export const seedsAccepted = z
  .object({
    enqueued: z.number().int().min(0).describe('New URLs queued'),
    already_seen: z.number().int().min(0).describe('URLs the crawl already knew'),
    request_id: z.string(),
  })
  .meta({ id: 'SeedsAccepted' });

export const robotsSchema = z.object({
  origin: z.string().nullable(),
  state: z.enum(['rules', 'allow-all', 'unavailable', 'missing', 'ignored']).describe('rules: fetched and parsed; allow-all: 4xx; unavailable: 5xx/timeouts, everything disallowed for now; missing: not fetched yet; ignored: TRAWL_ROBOTS=false'),
  status: z.number().int().nullable(),
  fetched_at: nullableTime,
  expires_at: nullableTime.describe('When it is fetched again (for unavailable: the next try)'),
  reason: z.string().nullable(),
  crawl_delay_ms: z.number().int().nullable(),
  rules: z.array(z.object({ allow: z.boolean(), pattern: z.string() })).describe('Rules that apply to our product token, in precedence order'),
  disallowed_paths: z.array(z.string()),
  usage: z
    .array(
      z.object({
        record: z.enum(['content-signal', 'content-usage']),
        path: z.string().nullable().describe('Path prefix the preference is limited to; null: the whole site'),
        values: z.record(z.string(), z.string()).describe('Category → value as written, lower case (e.g. ai-train → no, train-ai → n)'),
      }),
    )
    .describe('Usage preferences robots.txt addresses to us or to every crawler (Content-Signal; Content-Usage of the IETF AI-preferences drafts). Shown only: they never widen what is fetched'),
});

const urlStates = z.object({ new: z.number(), queued: z.number(), done: z.number(), failed: z.number(), skipped: z.number() });

export const domainStatus = z
  .object({
    host: z.string(),
    worker_id: z.number().int().describe('The partition that owns the host (one partition per worker in the original design); any worker consuming that partition fetches it'),
    partition: z.number().int(),
    paused: z.boolean(),
    render_override: z.enum(['always', 'never']).nullable().describe('An operator\'s rendering override for the host (null: TRAWL_RENDER decides)'),
    crawl_delay_ms: z.number().int().describe('Delay between requests to this host now in force'),
    delay_reason: z.enum(['default', 'crawl-delay', 'backoff', 'adaptive', 'capped']).describe('Which term sets it: the configured delay, robots.txt Crawl-delay, back-off, response time × factor, or the maximum delay'),
    delay_terms: z.object({ base_ms: z.number(), base: z.enum(['default', 'crawl-delay']), backoff_ms: z.number(), adaptive_ms: z.number(), max_delay_ms: z.number() }),
    last_fetched_at: nullableTime,
    last_status: z.number().int().nullable(),
    last_error: z.string().nullable(),
    next_available_at: isoTime.describe('The host may be fetched again from then (now, when it may be fetched now)'),
    queue_depth: z.number().int().describe('URLs waiting in the host\'s back queues'),
    in_flight: z.boolean(),
    leased: z.boolean(),
    backoff_ms: z.number(),
    backoff_streak: z.number().int(),
    backoff_until: nullableTime,
    proxy_tier: z.string().nullable().describe('The proxy tier the host\'s requests go through (`none`: direct); null without proxies'),
    tier_level: z.number().int().describe('Tiers the host has been moved up from its planned one after refusing the crawler (never lowered during a crawl)'),
    refusals: z.number().int().describe('Refusals in a row (403, 429 without Retry-After, challenge pages, resets at once): at TRAWL_BLOCK_THRESHOLD the host is judged blocked'),
    blocked_reason: z.string().nullable().describe('Why trawl paused the host itself (blocked, no proxy tier left); null otherwise. Resuming the host clears it'),
    rank: z
      .object({
        score: z.number().describe('0..1: the weighted mean of its parts (TRAWL_PRIORITY_WEIGHTS authority and seed)'),
        linking_hosts: z.number().int().describe('Distinct hosts seen linking to it (a HyperLogLog estimate): its authority'),
        seed_priority: z.number().describe('The highest priority one of its seeds was given (0: none)'),
      })
      .describe('What the dispatcher ranks the host by when more hosts are due than it may claim (docs/priority.md)'),
    robots: robotsSchema,
    robots_disallowed_paths: z.array(z.string()).describe('The Disallow patterns of robots.txt that apply to us, as a flat list (robots.disallowed_paths)'),
    dead_letters: z.number().int().describe('URLs of this host given up on (dead-lettered)'),
    urls: urlStates,
  })
  .meta({ id: 'DomainStatus' });

export const fetchesQuery = z.object({ limit: z.coerce.number().int().min(1).max(500).default(50) });

export const recentFetches = z
  .object({
    host: z.string(),
    fetches: z.array(
      z.object({
        url: z.string(),
        url_hash: z.string(),
        http_status: z.number().int().nullable(),
        error_code: z.string().nullable(),
        error_message: z.string().nullable(),
        fetched_at: isoTime,
        fetch_ms: z.number().nullable(),
        content_length: z.number().nullable(),
        next_crawl_at: nullableTime,
        rendered: z.boolean().describe('Links, text and fingerprint came from the page as headless Chromium rendered it (TRAWL_RENDER)'),
        render_reason: z.string().nullable().describe('Why the page was or was not rendered (the classifier\'s signal, the host\'s sampling or verdict, a failed render); null: not considered'),
      }),
    ),
  })
  .meta({ id: 'RecentFetches' });

export const refreshBody = z
  .object({ priority: z.number().min(0).max(1).default(1).describe('0..1; 1 is the top band') })
  .strict()
  .default({ priority: 1 });

export const refreshAccepted = z.object({ queued: z.literal(true), estimated_crawl_at: nullableTime.describe('Null while the host is paused') }).meta({ id: 'RefreshAccepted' });

export const pausedState = z
  .object({
    all: z.boolean().describe('The whole crawl is paused'),
    hosts: z.array(
      z.object({
        host: z.string(),
        paused_at: nullableTime,
        paused_by: z.string().nullable().describe('Token id (never the token); `trawl` for a host trawl paused itself'),
        reason: z.string().nullable().describe('Why trawl paused it itself (it refuses the crawler and no proxy tier is left); null for an operator\'s pause'),
      }),
    ),
  })
  .meta({ id: 'Paused' });

export const hostPaused = z.object({ host: z.string(), paused: z.boolean() }).meta({ id: 'HostPaused' });

export const renderOverrideBody = z
  .object({ mode: z.enum(['auto', 'always', 'never']).describe('`always` or `never` render the host\'s pages whatever TRAWL_RENDER=auto would decide; `auto` clears the override') })
  .meta({ id: 'RenderOverrideBody' });

export const hostRenderOverride = z.object({ host: z.string(), render_override: z.enum(['always', 'never']).nullable() }).meta({ id: 'HostRenderOverride' });

const counts = z.record(z.string(), z.number());

export const statsSchema = z
  .object({
    at: isoTime,
    namespace: z.string(),
    paused: z.object({ all: z.boolean(), hosts: z.number().int() }),
    admission: z
      .object({
        state: z.enum(['admitting', 'paused']).describe('paused: the frontier holds maxQueued URLs or more, seeds wait in the seeds queue and POST /v1/crawl/seeds answers 429'),
        queued: z.number().describe('URLs queued in the frontier when the state was decided'),
        maxQueued: z.number().describe('TRAWL_FRONTIER_MAX_QUEUED (0: no limit)'),
        resumeBelow: z.number().describe('Seeds are admitted again once fewer URLs than this are queued'),
        since: nullableTime,
      })
      .describe('Seed admission'),
    frontier: z.object({
      queued: z.number().describe('URLs queued in Redis'),
      spilled: z.number().describe('URLs queued in PostgreSQL, past TRAWL_FRONTIER_REDIS_MAX_URLS (also counted as queued in db.urls)'),
      leased: z.number(),
      hostsWaiting: z.number(),
      hostsReady: z.number(),
      done: z.number(),
      hostsInFlight: z.number(),
      hostsBackingOff: z.number().describe('Estimated from a sample of hosts'),
      oldestQueuedAt: nullableTime,
      oldestQueuedAgeS: z.number().nullable(),
      processBacklog: z.number().describe('Fetched pages handed to the process stage and not yet recorded'),
      processOldestAgeS: z.number().nullable().describe('How long the oldest of them has waited'),
      renderBacklog: z.number().describe('Pages an HTTP-only fetch stage handed to a render stage and not yet taken up (each holds its host)'),
      renderOldestAgeS: z.number().nullable().describe('How long the oldest of them has waited'),
      partitions: z.array(
        z.object({ partition: z.number(), queued: z.number(), spilled: z.number(), leased: z.number(), hostsWaiting: z.number(), hostsReady: z.number(), done: z.number(), processBacklog: z.number() }),
      ),
    }),
    rate: z.object({
      fetchesPerSecond: z.number().nullable().describe('Requests (pages and robots.txt) per second over the last 30 s'),
      politeCapacityPerSecond: z.number().describe('Σ over hosts with work of 1 / the delay in force, estimated from a sample'),
      utilization: z.number().nullable(),
      hostsSampled: z.number(),
      hostsWithWork: z.number(),
    }),
    queues: z.array(z.object({ name: z.string(), prefix: z.string(), waiting: z.number(), active: z.number(), delayed: z.number(), failed: z.number(), completed: z.number() })),
    counters: counts,
    outcomes: z.object({ byClass: counts, errorCodes: z.array(z.object({ code: z.string(), pages: z.number() })) }),
    deadLetters: z.object({ count: z.number(), sampled: z.number(), topReasons: z.array(z.object({ reason: z.string(), count: z.number() })) }),
    recrawl: z.object({ deadlineMissRate: z.number().nullable(), recrawls: z.number(), late: z.number(), overdue: z.number(), pages: z.number() }),
    schedulers: z.array(z.object({ member: z.string(), partitions: z.array(z.number()) })),
    workers: z.number().describe('Fetch consumers connected to partition 0'),
    workerProcesses: z
      .array(z.object({ member: z.string(), partitions: z.array(z.number()) }))
      .describe('Live worker processes (heartbeating in Redis) and the partitions each consumes'),
    db: z.object({ urls: counts, pages: z.number(), byStatus: counts }),
    topHosts: z.array(z.object({ host: z.string(), queued: z.number(), delayMs: z.number() })),
  })
  .meta({ id: 'Stats' });

export const freshnessQuery = z.object({
  host: hostParams.shape.host.optional(),
  grace_s: z.coerce.number().min(0).max(86_400 * 30).default(300).describe('A re-crawl later than due + grace missed its deadline'),
  recent_s: z.coerce.number().min(1).max(86_400 * 90).default(86_400).describe('Which re-crawls count: those of the last this-many seconds'),
});

const freshnessRow = z.object({
  host: z.string().nullable(),
  pages: z.number(),
  scheduled: z.number(),
  changing: z.number(),
  medianChangeIntervalS: z.number().nullable(),
  overdue: z.number(),
  oldestOverdueS: z.number().nullable(),
  recrawls: z.number(),
  late: z.number(),
  deadlineMissRate: z.number().nullable(),
});

export const freshnessReport = z.object({ total: freshnessRow, hosts: z.array(freshnessRow) }).meta({ id: 'Freshness' });

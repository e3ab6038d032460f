import { z } from 'zod';

/** The longest give-up reason a fetch job's payload carries (`e`). */
export const REASON_MAX_LENGTH = 10_000;

/**
 * A fetch job's payload on the wire. Kept small (BullMQ stores it per waiting job): the URL and
 * the few fields the gate and the pipeline need. Field names are short on purpose and never
 * travel past the queue's edge: `decodeFetchJob` turns them into a `FetchJob`.
 */
export const fetchJobDataSchema = z.object({
  /** Canonical URL. */
  u: z.string().min(1).max(65_536),
  /** Host (politeness key). */
  h: z.string().min(1).max(300),
  /** Frontier partition. */
  p: z.number().int().min(0),
  /** Depth from the seed. */
  d: z.number().int().min(0),
  /** Links followed from its seed at most, when the seed set a limit of its own. */
  m: z.number().int().min(0).optional(),
  /** Redirect hops that led here. */
  x: z.number().int().min(0).default(0),
  /** Flags (seed, re-crawl, redirect target). */
  f: z.number().int().min(0).default(0),
  /** Priority band (to put the URL back where it came from). */
  b: z.number().int().min(0).default(0),
  /** Frontier lease id; absent for a job added by hand (it is adopted at the gate). */
  l: z.string().min(1).max(200).optional(),
  /** When the host comes due (epoch ms), if the job was handed out ahead of it: a hint, the gate decides. */
  t: z.number().int().min(0).optional(),
  /** Tries made before this job was put in the BullMQ queue (from the ready list, which keeps no count). */
  a: z.number().int().min(0).optional(),
  /** Why the pipeline gave up on it: set on a job from the ready list that goes straight to the dead-letter queue. */
  e: z.string().max(REASON_MAX_LENGTH).optional(),
}).superRefine((data, ctx) => {
  // The host gate, the pause and the politeness delay key on `h`: a job whose `h` is not its URL's
  // host (one added or edited by hand) would be fetched under another host's rules.
  if (urlHost(data.u) !== data.h) ctx.addIssue({ code: 'custom', path: ['h'], message: 'must be the host of the URL u (lowercase, with a non-default port)' });
});
export type FetchJobData = z.output<typeof fetchJobDataSchema>;

/** The host of an http(s) URL as the politeness key names it ("example.com", "127.0.0.5:8080"), or null. */
function urlHost(url: string): string | null {
  try {
    const parsed = new URL(url);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return null;
    // WHATWG lowercases the host and drops the default port; the key has no trailing dot either.
    const hostname = parsed.hostname.replace(/\.+$/, '');
    return parsed.port === '' ? hostname : `${hostname}:${parsed.port}`;
  } catch {
    return null;
  }
}

/** A fetch job as the pipeline reads it, decoded once from its payload. */
export interface FetchJob {
  /** Canonical URL. */
  url: string;
  /** Host (the politeness key). */
  host: string;
  /** Frontier partition. */
  partition: number;
  /** Depth from the seed. */
  depth: number;
  /** Links followed from its seed at most, when the seed set a limit of its own. */
  maxDepth: number | null;
  /** Redirect hops that led here. */
  hops: number;
  /** `UrlFlag` bits (seed, re-crawl, redirect target, sitemap, verify). */
  flags: number;
  /** Priority band (to put the URL back where it came from). */
  band: number;
  /** Frontier lease id; null for a job added by hand (it is adopted at the gate). */
  leaseId: string | null;
  /** When the host comes due (epoch ms), if the job was handed out ahead of it: a hint, the gate decides. */
  hostDueAt: number | null;
}

export function decodeFetchJob(data: FetchJobData): FetchJob {
  return {
    url: data.u,
    host: data.h,
    partition: data.p,
    depth: data.d,
    maxDepth: data.m ?? null,
    hops: data.x,
    flags: data.f,
    band: data.b,
    leaseId: data.l ?? null,
    hostDueAt: data.t ?? null,
  };
}

export function encodeFetchJob(job: FetchJob): FetchJobData {
  return {
    u: job.url,
    h: job.host,
    p: job.partition,
    d: job.depth,
    ...(job.maxDepth === null ? {} : { m: job.maxDepth }),
    x: job.hops,
    f: job.flags,
    b: job.band,
    ...(job.leaseId === null ? {} : { l: job.leaseId }),
    ...(job.hostDueAt === null ? {} : { t: Math.round(job.hostDueAt) }),
  };
}

/** What the pipeline decided about one job; the queue turns it into a BullMQ action. */
export type JobResult =
  /** Finished (fetched and recorded, or skipped on purpose): complete the job. */
  | { outcome: 'done'; summary: Record<string, unknown> }
  /** The host gate said not yet: run again at `until` (not an attempt). */
  | { outcome: 'defer'; until: number }
  /** A transient failure: try again after `delayMs` (counts as an attempt). */
  | { outcome: 'retry'; reason: string; delayMs: number }
  /** Give up: move to the failed set (the dead-letter queue) with this reason. */
  | { outcome: 'dead'; reason: string }
  /** The job carries a lease that expired and whose URL went back to the frontier. */
  | { outcome: 'stale' };

export interface FetchJobContext {
  /** The BullMQ job id (the lease id for a dispatched job). */
  id: string;
  job: FetchJob;
  /** Unique per processing attempt (the job lock token). */
  token: string;
  /** 1 for the first try. */
  attempt: number;
  maxAttempts: number;
  signal: AbortSignal | undefined;
  /**
   * BullMQ handed this job over after its worker stopped renewing the lock (killed, hung): an
   * earlier run may have fetched and recorded it already.
   */
  redelivered?: boolean;
}

export const fetchQueueName = (partition: number): string => `fetch-p${partition}`;
/** BullMQ key prefix: carries the partition's hash tag, like the frontier's keys. */
export const fetchQueuePrefix = (namespace: string, partition: number): string => `${namespace}:{p${partition}}`;

import type { Clock } from '@trawl/core';
import { bindScripts, loadScripts, type RedisClient, type ScriptCaller } from '@trawl/redis';
import type { Frontier } from './frontier.js';
import { admissionKey } from './keys.js';

const SCRIPTS = loadScripts(import.meta.url, '../lua', ['setAdmission-1']);

/** `admitting`: seeds enter the frontier; `paused`: they wait in the `seeds` queue. */
export type AdmissionState = 'admitting' | 'paused';

/**
 * Seed injection resumes once the frontier is below this share of its threshold, so a frontier
 * hovering at the threshold does not pause and resume seeds on every check.
 */
export const ADMISSION_RESUME_FRACTION = 0.9;

export interface AdmissionLimits {
  /** Pause seed injection at this many queued URLs (0: never). */
  maxQueued: number;
  /** Resume it below this many. */
  resumeBelow: number;
}

export interface AdmissionStatus extends AdmissionLimits {
  state: AdmissionState;
  /** URLs queued in the frontier when the state was decided. */
  queued: number;
  /** Since when the crawl has been in this state (epoch ms). */
  since: number;
}

/** The limits for a threshold: resume below `ADMISSION_RESUME_FRACTION` of it. */
export function admissionLimits(maxQueued: number): AdmissionLimits {
  return { maxQueued, resumeBelow: Math.floor(maxQueued * ADMISSION_RESUME_FRACTION) };
}

/**
 * Seed admission with hysteresis: pause at `maxQueued` queued URLs, resume only below
 * `resumeBelow`; between the two the state stays what it was. A threshold of 0 always admits.
 */
export function admissionState(previous: AdmissionState, queued: number, limits: AdmissionLimits): AdmissionState {
  if (limits.maxQueued <= 0) return 'admitting';
  if (previous === 'paused') return queued < limits.resumeBelow ? 'admitting' : 'paused';
  return queued >= limits.maxQueued ? 'paused' : 'admitting';
}

/**
 * Whether seeds may enter the frontier now. The state is kept in Redis, so every process of the
 * crawl (schedulers consuming the `seeds` queue, dashboards answering `POST /v1/crawl/seeds`,
 * `trawl seed`) shares one hysteresis; each `check` reads the frontier's queued counters (one
 * HGET a partition, never a scan) and records the decision.
 *
 * The schedulers, which consume the seeds, set the threshold (`setsThreshold`); a dashboard or
 * `trawl seed` follows the one they recorded, and uses its own only before any scheduler has
 * checked — so a `trawl seed` run without the crawl's environment cannot flip the state.
 */
export class Admission {
  private readonly scripts: Record<'setAdmission', ScriptCaller>;
  private readonly key: string;
  private readonly clock: Clock;
  /** This process's own threshold (TRAWL_FRONTIER_MAX_QUEUED as it was configured here). */
  readonly limits: AdmissionLimits;

  constructor(
    private readonly redis: RedisClient,
    private readonly frontier: Pick<Frontier, 'queuedCount'>,
    options: { prefix: string; maxQueued: number; clock: Clock },
  ) {
    this.clock = options.clock;
    this.scripts = bindScripts<'setAdmission'>(redis, SCRIPTS);
    this.key = admissionKey(options.prefix);
    this.limits = admissionLimits(options.maxQueued);
  }

  async check(options: { setsThreshold?: boolean } = {}): Promise<AdmissionStatus> {
    const [queued, [stored, storedMax, storedResume]] = await Promise.all([this.frontier.queuedCount(), this.redis.hmget(this.key, 'state', 'max', 'resume')]);
    const previous: AdmissionState = stored === 'paused' ? 'paused' : 'admitting';
    const limits = options.setsThreshold || storedMax === null || storedResume === null ? this.limits : { maxQueued: Number(storedMax), resumeBelow: Number(storedResume) };
    const next = admissionState(previous, queued, limits);
    const now = this.clock.now();
    // Another process may have decided between the read and this write: its decision stands.
    const [state, since] = (await this.scripts.setAdmission([this.key], [previous, next, queued, limits.maxQueued, limits.resumeBelow, now])) as [string, number];
    return { state: state === 'paused' ? 'paused' : 'admitting', queued, since: Number(since), ...limits };
  }
}

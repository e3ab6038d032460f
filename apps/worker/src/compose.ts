import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { TrawlError } from '@trawl/core';
import { ProcessStream } from '@trawl/frontier';
import { heldFetchJobs, RenderWorkers } from '@trawl/queue';
import { WorkerMembership } from '@trawl/dispatch';
import {
  Acks,
  AddressGroups,
  blockOptionsOf,
  canonicalSitemapUrls,
  closePipeline,
  CrawlArchive,
  CrawlWorker,
  type CrawlWorkerDeps,
  Duplicates,
  ProcessWorker,
  RecentBodies,
  Records,
  RenderStage,
  ThreadAnalyzer,
  UrlStates,
  Validators,
} from '@trawl/crawl';
import type { Config } from '@trawl/config';
import { NearDupIndex, Sitemaps } from '@trawl/db';
import { WarcWriter } from '@trawl/warc';
import { pauseBlockedHost, type Runtime } from '@trawl/runtime';
import { ProcessThread } from './process-on-thread.js';
import { renderDepsOf, renderHandOverOf, rolesGivenBrowser } from './render.js';

/** A worker process's stages (TRAWL_WORKER_ROLES). */
export type WorkerRole = 'fetch' | 'process' | 'render';

/** The sitemaps a robots.txt names; when it names none, /sitemap.xml if the crawl guesses it. */
function recordSitemaps(sitemaps: Sitemaps, config: Readonly<Config>, origin: string, urls: string[]): Promise<void> {
  if (!config.sitemaps.enabled) return Promise.resolve();
  if (urls.length > 0) return sitemaps.add(origin, canonicalSitemapUrls(urls), 'robots');
  return config.sitemaps.guess ? sitemaps.add(origin, [`${origin}/sitemap.xml`], 'guess') : Promise.resolve();
}

/**
 * A worker process's stages, as TRAWL_WORKER_ROLES says: the fetch stage (one BullMQ consumer
 * per partition it is given), the process stage (reading every partition's process stream, in a
 * consumer group shared with every other process stage), or both — which share this process's
 * batchers, its analysis thread, and the bodies just fetched (read back without the store).
 */
export class WorkerStages {
  constructor(
    readonly deps: CrawlWorkerDeps,
    readonly fetch: CrawlWorker | null,
    /** The process stage on this event loop. */
    readonly process: ProcessWorker | null,
    private readonly logger: Runtime['logger'],
    /** The process stage on a thread of its own (TRAWL_PROCESS_THREAD). */
    readonly processThread: ProcessThread | null = null,
    /** The render stage (roles with `render` and without `fetch`). */
    readonly render: RenderStage | null = null,
    /** What closes with the stages (the render queue a fetch stage without a browser adds to). */
    private readonly closers: readonly (() => Promise<void>)[] = [],
  ) {}

  start(): void {
    this.fetch?.start();
    this.process?.start();
    this.processThread?.start().catch(() => undefined);
    this.render?.start().catch((error: unknown) => this.logger.error({ err: error }, 'the render stage could not start'));
  }

  /** The partitions the fetch stage consumes from now on (the process stage reads them all). */
  consume(partitions: readonly number[]): void {
    this.fetch?.consume(partitions);
  }

  get partitions(): number[] {
    return this.fetch?.partitions ?? [];
  }

  /** The first fatal error either stage met, if any. */
  get fatal(): TrawlError | null {
    return this.fetch?.fatal ?? this.process?.fatal ?? this.processThread?.fatal ?? null;
  }

  /**
   * Resolves once the fetch stage consumes and the process stage can take pages: its analysis
   * thread, or the process thread, has started. Loading the process thread's modules takes a
   * second or two; a fetch stage that fetched meanwhile would leave every page it fetched
   * waiting, and every host waiting on its first page's links for its next URL, well past the
   * host's delay. (A process thread that cannot start is fatal: `fatal` says so.)
   */
  async ready(): Promise<void> {
    await Promise.all([
      this.fetch?.ready(),
      this.process ? this.deps.analyzer?.ready() : undefined,
      this.processThread?.start().catch(() => undefined),
      this.render?.start(),
    ]);
  }

  /**
   * Stops fetching first (nothing new is handed off), then lets the process stage finish the
   * pages it holds (the rest wait on their streams for another process stage, or the next start),
   * then flushes what the stages share. Up to `timeoutMs` in all.
   */
  async stop(timeoutMs: number): Promise<{ drained: boolean }> {
    const until = Date.now() + timeoutMs;
    const fetched = (await this.fetch?.stop(timeoutMs)) ?? { drained: true };
    // The renders in hand finish and hand their pages on (a render stage leaves the registry first).
    await this.render?.stop();
    const left = Math.max(0, until - Date.now());
    const [processed, threaded] = await Promise.all([this.process?.stop(left) ?? { drained: true }, this.processThread?.stop(left) ?? { drained: true }]);
    await closePipeline(this.deps, this.logger);
    await Promise.all(this.closers.map((close) => close().catch(() => undefined)));
    return { drained: fetched.drained && processed.drained && threaded.drained };
  }
}

/** A worker's object graph on a runtime: the stages its roles name, their batchers, one fetch consumer per partition. */
export function createCrawlWorker(
  runtime: Runtime,
  options: {
    concurrency: number;
    partitions?: readonly number[];
    roles?: readonly WorkerRole[];
    onFatal?: (error: TrawlError) => void;
    /** Where the process stage finds bodies stored by a fetch stage of this process (a process thread's). */
    bodies?: RecentBodies;
  },
): WorkerStages {
  const { config } = runtime;
  const given = rolesGivenBrowser(new Set(options.roles ?? config.worker.roles), config.render);
  const roles = given.roles;
  if (given.dropped !== null) runtime.logger.warn({ roles: [...roles] }, given.dropped);
  // Both stages here: the process stage runs on a thread of its own unless told otherwise.
  const processThread =
    roles.has('fetch') && roles.has('process') && config.process.thread
      ? new ProcessThread(runtime, { config, logger: runtime.logger.child({ component: 'process-thread' }), onFatal: options.onFatal })
      : null;
  if (processThread) roles.delete('process');
  const all = Array.from({ length: config.partitions }, (_, p) => p);
  const partitions = options.partitions ?? all;
  const handOver = roles.has('fetch') && !roles.has('render') ? renderHandOverOf(runtime) : undefined;
  const sitemaps = new Sitemaps(runtime.db.pool, config.namespace);
  const nearDup = new NearDupIndex(runtime.db);
  // One WARC writer per worker process: its files carry the host name and pid, and are finished when the worker stops.
  const archive = config.warc.write && roles.has('process')
    ? new CrawlArchive(new WarcWriter({ dir: config.warc.dir, prefix: config.warc.prefix, maxFileBytes: config.warc.maxFileBytes }), nearDup, runtime.store)
    : undefined;
  const deps: CrawlWorkerDeps = {
    frontier: runtime.frontier,
    fetcher: runtime.fetcher,
    store: runtime.store,
    robots: runtime.robots,
    discovery: runtime.discovery(),
    records: new Records(
      runtime.db,
      async () => {
        const policy = await runtime.policy.get();
        return policy?.policy.recrawl.enabled ? policy.recrawl : null;
      },
      runtime.frontier,
    ),
    validators: new Validators(runtime.db),
    storeText: config.worker.contentStoreText,
    duplicates: new Duplicates(nearDup, () => runtime.clock.now()),
    analyzer: roles.has('process') ? new ThreadAnalyzer(runtime.logger.child({ component: 'analyzer' }), { nice: config.process.nice }) : undefined,
    archive,
    urlStates: new UrlStates(runtime.db),
    acks: new Acks(runtime.frontier),
    policy: runtime.policy,
    counters: runtime.counters,
    timings: runtime.timings,
    clock: runtime.clock,
    logger: runtime.logger.child({ component: 'worker' }),
    retry: { attempts: config.worker.attempts, timeoutAttempts: config.worker.timeoutAttempts, robotsAttempts: config.robots.attempts, baseMs: config.worker.retryBaseMs, maxMs: config.worker.retryMaxMs },
    leaseMs: config.worker.leaseMs,
    // Twice per BullMQ lock: a job handed over while its first attempt still records waits for
    // three missed renewals, so a dead attempt's fetched pages come back about as fast as its jobs.
    renewEveryMs: Math.min(Math.floor(config.worker.leaseMs / 3), Math.floor(config.worker.stalledMs / 2)),
    gateWaitMs: Math.max(100, 4 * config.dispatch.leadMs),
    // A render stage frees the address slots a fetch stage handed over with a page's host.
    addresses: roles.has('fetch') || roles.has('render')
      ? new AddressGroups({
          gate: runtime.addressGate,
          serverAddress: (host) => runtime.fetcher.serverAddress(host),
          onError: (error) => runtime.logger.warn({ err: error }, 'could not release an address slot: it lapses with its hold'),
        })
      : undefined,
    recordSitemaps: (origin, urls) => recordSitemaps(sitemaps, config, origin, urls),
    sitemaps: config.sitemaps.enabled
      ? { store: sitemaps, frontier: runtime.frontier, markQueued: (hashes) => runtime.db.markQueued(hashes), maxEntries: config.sitemaps.maxEntries }
      : undefined,
    // Pages are rendered in the fetch stage, while their job holds the host; a render stage
    // renders the pages a fetch stage without the role hands it, the host still held.
    render: roles.has('render') ? renderDepsOf(runtime) : undefined,
    renderHandOver: handOver,
    blocking:
      config.politeness.blockThreshold > 0
        ? {
            options: blockOptionsOf(config.politeness),
            tierOf: (host, level) => runtime.fetcher.tierOf(host, level),
            pause: (host, reason) => pauseBlockedHost(runtime, host, reason),
            onBlocked: (event) => runtime.tellBlocked(event),
          }
        : undefined,
    // The process stage reads what a fetch stage of this process just stored from memory.
    bodies: processThread ? { put: (key, body) => processThread.put(key, body), take: () => undefined } : (options.bodies ?? (roles.has('fetch') && roles.has('process') ? new RecentBodies() : undefined)),
  };
  const fetch = roles.has('fetch')
    ? new CrawlWorker(deps, {
        connection: runtime.blockingRedis(),
        namespace: config.namespace,
        partitions,
        concurrency: options.concurrency,
        stalledMs: config.worker.stalledMs,
        logger: runtime.logger,
        holder: () => runtime.frontier.holderId || undefined,
        onFatal: options.onFatal,
      })
    : null;
  const process = roles.has('process')
    ? new ProcessWorker(
        { ...deps, logger: runtime.logger.child({ component: 'process' }), maxDeliveries: config.worker.attempts },
        {
          stream: new ProcessStream(runtime.processRedis(), config.namespace, config.partitions, `${PROCESS_CONSUMER}${processIdentity()}:${randomUUID().slice(0, 6)}`),
          partitions: all,
          concurrency: config.process.concurrency,
          claimIdleMs: config.process.claimMs,
          logger: runtime.logger,
          onFatal: options.onFatal,
        },
      )
    : null;
  const render = roles.has('render') && !roles.has('fetch') ? renderStageOf(runtime, deps) : null;
  return new WorkerStages(deps, fetch, process, runtime.logger, processThread, render, handOver ? [() => handOver.close()] : []);
}

/** Render workers' names in the registry of live render stages: `render@<host>:<pid>:<random>`. */
const RENDER_MEMBER = 'render@';

/**
 * The render stage of a worker with `render` and without `fetch`: it consumes the render queue,
 * heartbeating in the registry fetch stages ask. Its jobs' locks last a few heartbeats (at most
 * TRAWL_STALLED_MS) and are checked every third of that, so a killed render worker's pages go to
 * another within a lock and a third.
 */
function renderStageOf(runtime: Runtime, deps: CrawlWorkerDeps): RenderStage | null {
  const { config } = runtime;
  if (!deps.render) return null;
  const heartbeatTtlMs = config.worker.heartbeatMs;
  return new RenderStage(
    { ...deps, render: deps.render, logger: runtime.logger.child({ component: 'render' }) },
    {
      connection: runtime.blockingRedis(),
      namespace: config.namespace,
      // Jobs wait in the worker for a browser page: a few per page keep the browser busy.
      concurrency: 2 * config.render.maxOpenPages,
      lockMs: Math.min(config.worker.stalledMs, Math.max(5000, 2 * heartbeatTtlMs)),
      registry: new RenderWorkers(runtime.redis, config.namespace),
      member: `${RENDER_MEMBER}${processIdentity()}:${randomUUID().slice(0, 6)}`,
      heartbeatTtlMs,
      logger: runtime.logger.child({ component: 'render' }),
    },
  );
}

/** How long a worker waits for its aborted fetches to end before saying, on a later heartbeat, that it is quiet. */
const QUIESCE_WAIT_MS = 2000;

/** Member names of workers, and consumer names of process stages: `<prefix><host>:<pid>:<random>`. */
const WORKER_MEMBER = 'worker@';
const PROCESS_CONSUMER = 'process@';
/** This process, among a crawl's: its host name and process id (a process stage on a thread shares both). */
const processIdentity = (): string => `${hostname()}:${globalThis.process.pid}`;

export interface WorkerService {
  worker: WorkerStages;
  membership: WorkerMembership | null;
  /** Stops taking jobs, drains (up to `timeoutMs`), and leaves the membership. */
  stop(timeoutMs: number): Promise<{ drained: boolean }>;
}

/**
 * A worker whose fetch stage joins the crawl's worker membership and consumes the partitions the
 * hash ring gives it, following the assignment as workers come and go; its process stage reads
 * every partition's stream.
 */
export async function startWorkerService(
  runtime: Runtime,
  options: { concurrency: number; memberId?: string; roles?: readonly WorkerRole[]; onFatal?: (error: TrawlError) => void },
): Promise<WorkerService> {
  const { config } = runtime;
  const worker = createCrawlWorker(runtime, { concurrency: options.concurrency, partitions: [], roles: options.roles, onFatal: options.onFatal });
  const memberId = options.memberId ?? `${WORKER_MEMBER}${processIdentity()}:${randomUUID().slice(0, 6)}`;
  // The fetch stage's holds at the gate end with this member's heartbeat; and this worker frees
  // those of any other whose heartbeat it sees lapse.
  if (worker.fetch) runtime.frontier.holdAs(memberId);
  const streams = new ProcessStream(runtime.redis, config.namespace, config.partitions, memberId);
  const freeLapsed = async (member: string): Promise<number> => {
    // Its fetch jobs not yet at the gate hold their hosts too (their leases were dispatched).
    const jobs = new Map(await Promise.all(Array.from({ length: config.partitions }, async (_, p) => [p, await heldFetchJobs(runtime.redis, config.namespace, p, member)] as const)));
    const requeued = await runtime.frontier.releaseHolder(member, jobs);
    // The dead worker's process stage (same process) leaves pages mid-processing: claimable now.
    const identity = member.startsWith(WORKER_MEMBER) ? member.slice(WORKER_MEMBER.length, member.lastIndexOf(':')) : '';
    if (identity !== '') await streams.expedite(`${PROCESS_CONSUMER}${identity}:`);
    return requeued;
  };
  const membership = worker.fetch
    ? new WorkerMembership(
        runtime.redis,
        { namespace: config.namespace, partitions: config.partitions, memberId, heartbeatTtlMs: config.worker.heartbeatMs },
        runtime.clock,
        runtime.logger.child({ component: 'membership' }),
        (partitions) => worker.consume(partitions),
        freeLapsed,
        {
          intact: async () => (await runtime.intact()).ok,
          quiesce: () => worker.fetch?.abortInFlight('Redis lost the crawl: aborted until it is rebuilt', QUIESCE_WAIT_MS) ?? Promise.resolve(true),
        },
      )
    : null;
  // The process stage can take pages before the fetch stage joins (see WorkerStages.ready).
  await worker.processThread?.start().catch(() => undefined);
  await membership?.start();
  worker.process?.start();
  await worker.ready();
  return {
    worker,
    membership,
    async stop(timeoutMs) {
      await membership?.stop();
      return worker.stop(timeoutMs);
    },
  };
}

import { randomUUID } from 'node:crypto';
import type { TrawlError } from '@trawl/core';
import { ProcessStream } from '@trawl/frontier';
import { forgetHeldFetchJobs, heldFetchJobs, RenderWorkers } from '@trawl/queue';
import { WorkerMembership } from '@trawl/dispatch';
import { AddressGroups, blockOptionsOf, CrawlWorker, type CrawlWorkerDeps, RecentBodies, RenderStage } from '@trawl/crawl';
import { pauseBlockedHost, type Runtime } from '@trawl/runtime';
import { ProcessThread } from './process-on-thread.js';
import { PROCESS_CONSUMER, processIdentity, processWorkerOf, sharedDepsOf } from './process-stage.js';
import { renderDepsOf, renderHandOverOf, rolesGivenBrowser } from './render.js';
import { type WorkerRole, WorkerStages } from './stages.js';

export { type WorkerRole, WorkerStages } from './stages.js';

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
  const partitions = options.partitions ?? Array.from({ length: config.partitions }, (_, p) => p);
  const handOver = roles.has('fetch') && !roles.has('render') ? renderHandOverOf(runtime) : undefined;
  const deps: CrawlWorkerDeps = {
    ...sharedDepsOf(runtime, {
      processing: roles.has('process'),
      // The process stage reads what a fetch stage of this process just stored from memory.
      bodies: processThread ? { put: (key, body) => processThread.put(key, body), take: () => undefined } : (options.bodies ?? (roles.has('fetch') && roles.has('process') ? new RecentBodies() : undefined)),
    }),
    fetcher: runtime.fetcher,
    // A render stage frees the address slots a fetch stage handed over with a page's host.
    addresses: roles.has('fetch') || roles.has('render')
      ? new AddressGroups({
          gate: runtime.addressGate,
          serverAddress: (host) => runtime.fetcher.serverAddress(host),
          onError: (error) => runtime.logger.warn({ err: error }, 'could not release an address slot: it lapses with its hold'),
        })
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
  };
  const fetch = roles.has('fetch')
    ? new CrawlWorker(deps, {
        connection: runtime.blockingRedis(),
        namespace: config.namespace,
        partitions,
        concurrency: options.concurrency,
        stalledMs: config.worker.stalledMs,
        jobs: { attempts: config.worker.attempts, deadLetterMax: config.worker.dlqMax },
        logger: runtime.logger,
        holder: () => runtime.frontier.holderId || undefined,
        onFatal: options.onFatal,
      })
    : null;
  const process = roles.has('process') ? processWorkerOf(runtime, deps, options.onFatal) : null;
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

/** Member names of workers: `worker@<host>:<pid>:<random>` (process stages are `process@…`, see process-stage.ts). */
const WORKER_MEMBER = 'worker@';

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
    // Their URLs are back in the frontier: the jobs it had taken from the ready lists must not run.
    await Promise.all(Array.from({ length: config.partitions }, (_, p) => forgetHeldFetchJobs(runtime.redis, config.namespace, p, member)));
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

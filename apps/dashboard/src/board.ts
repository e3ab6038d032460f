import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import { fetchJobDataSchema, freshLeaseRetry, isFetchQueueName, type openQueue, type QueueSpec, SEEDS_QUEUE, seedsJobSchema } from '@trawl/queue';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ApiError } from './http.js';

type Queue = ReturnType<typeof openQueue>;
type Job = NonNullable<Awaited<ReturnType<Queue['getJob']>>>;

/** A write through bull-board that trawl's job schemas refuse: answered 400 with what is wrong. */
export class BoardInputError extends Error {
  readonly statusCode = 400;
  constructor(message: string) {
    super(message);
    this.name = 'BoardInputError';
  }
}

/**
 * What a job of `queue` must hold, by trawl's own zod schemas: the seeds queue's jobs, or a fetch
 * job (whose host must be its URL's). Any other queue (the sweeps) takes no job by hand.
 */
export function validateBoardJob(queue: string, data: unknown): unknown {
  const schema = queue === SEEDS_QUEUE ? seedsJobSchema : isFetchQueueName(queue) ? fetchJobDataSchema : null;
  if (schema === null) throw new BoardInputError(`the ${queue} queue takes no job by hand`);
  const parsed = schema.safeParse(data);
  if (!parsed.success) throw new BoardInputError(`invalid ${queue === SEEDS_QUEUE ? 'seeds' : 'fetch'} job: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'data'}: ${i.message}`).join('; ')}`);
  return parsed.data;
}

/** Where bull-board lives: fixed, like the API's paths. */
export const BOARD_PATH = '/queues';

/**
 * bull-board's queue adapter for trawl's queues. bull-board retries a job by calling its
 * `retry()` itself (a job's Retry button, a queue's Retry all); for a fetch job that would run it
 * again under its old lease, which may be tombstoned — and the gate drops such a job as stale.
 * Every job this adapter hands out retries through `freshLeaseRetry` instead: fresh attempts
 * and a fresh lease id, so the retry is fetched (through the host gate). Every job added or
 * edited through bull-board is validated with trawl's job schemas first (`validateBoardJob`), so a
 * typo is refused in the form rather than failed later, and no hand-made fetch job names one host
 * in its URL and another in its politeness key.
 */
export class TrawlQueueAdapter extends BullMQAdapter {
  constructor(
    private readonly bullQueue: Queue,
    options: ConstructorParameters<typeof BullMQAdapter>[1] = {},
  ) {
    super(bullQueue, options);
  }

  private wrap(job: Job): Job {
    const queue = this.bullQueue.name;
    return new Proxy(job, {
      get(target, property, receiver) {
        if (property === 'retry') return (state: 'failed' | 'completed' = 'failed') => freshLeaseRetry(target, state);
        if (property === 'updateData') return (data: unknown) => target.updateData(validateBoardJob(queue, data) as Job['data']);
        return Reflect.get(target, property, receiver) as unknown;
      },
    });
  }

  override async getJob(id: string) {
    const job = await this.bullQueue.getJob(id);
    return job ? this.wrap(job) : job;
  }

  override async getJobs(...args: Parameters<BullMQAdapter['getJobs']>) {
    return (await super.getJobs(...args)).map((job) => this.wrap(job as Job));
  }

  override addJob(name: string, data: unknown, options: Parameters<BullMQAdapter['addJob']>[2]) {
    return super.addJob(name, validateBoardJob(this.bullQueue.name, data), options);
  }
}

/**
 * A copy of bull-board's UI without its one outside resource (a web-font stylesheet), so the
 * dashboard loads nothing from another site. The static files are linked, not copied.
 */
function localUi(): { path: string; remove(): void } {
  const require = createRequire(import.meta.url);
  const ui = dirname(require.resolve('@bull-board/ui/package.json'));
  const root = mkdtempSync(join(tmpdir(), 'trawl-bull-board-'));
  mkdirSync(join(root, 'dist'));
  const view = readFileSync(join(ui, 'dist', 'index.ejs'), 'utf8').replace(/^\s*<link[^>]+fonts\.googleapis\.com[^>]*>\s*$/m, '');
  writeFileSync(join(root, 'dist', 'index.ejs'), view);
  symlinkSync(join(ui, 'dist', 'static'), join(root, 'dist', 'static'), 'dir');
  return { path: root, remove: () => rmSync(root, { recursive: true, force: true }) };
}

export interface Board {
  /** Shows exactly these queues (called when new ones are discovered). */
  setQueues(queues: readonly { spec: QueueSpec; queue: Queue }[]): void;
  close(): void;
}

/** bull-board at /queues, every queue of the namespace, writes allowed (the seeds form, retries). */
export async function registerBoard(app: FastifyInstance, queues: readonly { spec: QueueSpec; queue: Queue }[], options: { title: string }): Promise<Board> {
  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(BOARD_PATH);
  const ui = localUi();
  const adapterOf = ({ spec, queue }: { spec: QueueSpec; queue: Queue }) =>
    new TrawlQueueAdapter(queue, {
      allowRetries: true,
      description: spec.name === SEEDS_QUEUE ? 'Seed URLs for the crawl: add a job with data {"urls": [...], "priority": 0.9, "max_depth": 5}' : isFetchQueueName(spec.name) ? 'Fetch jobs of one frontier partition (the in-flight window); failed = the dead-letter queue' : '',
      jobDataSchema: spec.name === SEEDS_QUEUE ? (z.toJSONSchema(seedsJobSchema, { io: 'input' }) as Record<string, unknown>) : undefined,
    });
  const board = createBullBoard({
    queues: queues.map(adapterOf),
    serverAdapter,
    options: { uiBasePath: ui.path, uiConfig: { boardTitle: options.title, hideDocsLink: true, miscLinks: [{ text: 'trawl overview', url: '/' }] } },
  });
  // bull-board answers a failure with the error's own message: only trawl's validation says what
  // was wrong; anything else is logged and answered without its text (it may name servers or keys).
  serverAdapter.setErrorHandler((error: Error & { statusCode?: number }) => {
    if (error instanceof BoardInputError) return { status: 400, body: { error: { key: 'ERRORS.BAD_REQUEST' }, message: error.message } };
    // trawl's own refusals (authentication, CSRF, the rate limit) say why, with their status.
    if (error instanceof ApiError) return { status: error.status as 400, body: { error: { key: 'ERRORS.BAD_REQUEST' }, message: error.message } };
    // A request Fastify itself refused (a body that is not JSON): the client's fault, said plainly.
    if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) return { status: error.statusCode as 400, body: { error: { key: 'ERRORS.BAD_REQUEST' }, message: 'bad request' } };
    app.log.error({ err: { message: error.message, stack: error.stack } }, 'bull-board request failed');
    return { status: 500, body: { error: { key: 'ERRORS.INTERNAL_SERVER_ERROR' }, message: 'internal error (logged)' } };
  });
  await app.register(serverAdapter.registerPlugin(), { prefix: BOARD_PATH });
  return {
    setQueues: (next) => board.replaceQueues(next.map(adapterOf)),
    close: () => ui.remove(),
  };
}

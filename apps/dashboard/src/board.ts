import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import { freshLeaseRetry, isFetchQueueName, type openQueue, type QueueSpec, SEEDS_QUEUE, seedsJobSchema } from '@trawl/queue';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';

type Queue = ReturnType<typeof openQueue>;
type Job = NonNullable<Awaited<ReturnType<Queue['getJob']>>>;

/** Where bull-board lives: fixed, like the API's paths. */
export const BOARD_PATH = '/queues';

/**
 * bull-board's queue adapter for trawl's queues. bull-board retries a job by calling its
 * `retry()` itself (a job's Retry button, a queue's Retry all); for a fetch job that would run it
 * again under its old lease, which may be tombstoned — and the gate drops such a job as stale.
 * Every job this adapter hands out retries through `freshLeaseRetry` instead: fresh attempts
 * and a fresh lease id, so the retry is fetched (through the host gate). Jobs added to `seeds`
 * from the UI are validated first, so a typo is refused in the form rather than failed later.
 */
export class TrawlQueueAdapter extends BullMQAdapter {
  constructor(
    private readonly bullQueue: Queue,
    options: ConstructorParameters<typeof BullMQAdapter>[1] = {},
  ) {
    super(bullQueue, options);
  }

  private wrap(job: Job): Job {
    return new Proxy(job, {
      get(target, property, receiver) {
        if (property === 'retry') return (state: 'failed' | 'completed' = 'failed') => freshLeaseRetry(target, state);
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
    if (this.bullQueue.name === SEEDS_QUEUE) {
      const parsed = seedsJobSchema.safeParse(data);
      if (!parsed.success) throw new Error(`invalid seeds job: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'data'}: ${i.message}`).join('; ')}`);
      return super.addJob(name, parsed.data, options);
    }
    return super.addJob(name, data, options);
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
  await app.register(serverAdapter.registerPlugin(), { prefix: BOARD_PATH });
  return {
    setQueues: (next) => board.replaceQueues(next.map(adapterOf)),
    close: () => ui.remove(),
  };
}

import type { Worker } from 'node:worker_threads';

/** What a thread answers to the call `{ id, input }`. */
export type ThreadReply<Out> = { id: number; result: Out } | { id: number; error: { message: string; code?: string } };

export interface ThreadCallsOptions {
  /** Starts the thread (called again for the next call after a thread died or was closed). */
  spawn: () => Worker;
  /** Messages that are not replies (a start-up handshake, say). */
  onMessage?: (message: unknown, worker: Worker) => void;
  /** The thread died (an error, or it exited); its pending calls are rejected with `error` already. */
  onDeath?: (error: Error, worker: Worker) => void;
  /**
   * At most this many calls in the thread at once; the others wait here, urgent ones first
   * (`call`'s option), and go in as answers come back. Default: every call goes in at once, and
   * calls are answered in the order they were made.
   */
  window?: number;
}

interface Waiter<In, Out> {
  input: In;
  resolve: (result: Out) => void;
  reject: (error: Error) => void;
}

/**
 * Calls into a worker thread that answers each `{ id, input }` with a `ThreadReply`. A reply's
 * error becomes an Error with the same message and `code` (an errno such as ENOSPC survives the
 * hop). Calls pending when the thread dies are rejected (those in it, and those waiting for room in
 * it), and the next call starts a new thread. The thread keeps the process alive only while calls
 * are pending.
 */
export class ThreadCalls<In, Out> {
  private worker: Worker | null = null;
  /** Calls in the thread, by id. */
  private readonly pending = new Map<number, Waiter<In, Out>>();
  /** Calls waiting for room in the thread (with a `window`): urgent ones, then the others. */
  private readonly waiting: { urgent: Waiter<In, Out>[]; plain: Waiter<In, Out>[] } = { urgent: [], plain: [] };
  private nextId = 0;

  constructor(private readonly options: ThreadCallsOptions) {}

  /** Whether a thread is running. */
  get running(): boolean {
    return this.worker !== null;
  }

  /** The running thread, started if there is none. */
  thread(): Worker {
    if (this.worker) return this.worker;
    const worker = this.options.spawn();
    worker.on('message', (message: unknown) => {
      if (typeof message === 'object' && message !== null && 'id' in message) this.settle(message as ThreadReply<Out>);
      else this.options.onMessage?.(message, worker);
    });
    const died = (error: Error) => {
      if (this.worker !== worker) return;
      this.worker = null;
      for (const [id, waiter] of this.pending) {
        this.pending.delete(id);
        waiter.reject(error);
      }
      for (const waiter of [...this.waiting.urgent.splice(0), ...this.waiting.plain.splice(0)]) waiter.reject(error);
      this.options.onDeath?.(error, worker);
    };
    worker.on('error', died);
    worker.on('exit', (code) => died(new Error(`the thread exited (code ${code})`)));
    this.worker = worker;
    return worker;
  }

  /**
   * Calls the thread with `input`. `urgent`: with a `window`, the call goes in ahead of every
   * waiting call that is not urgent (among urgent ones, in order).
   */
  call(input: In, options: { urgent?: boolean } = {}): Promise<Out> {
    const worker = this.thread();
    if (this.options.window === undefined) return this.post(worker, input);
    return new Promise<Out>((resolve, reject) => {
      (options.urgent ? this.waiting.urgent : this.waiting.plain).push({ input, resolve, reject });
      this.fill();
    });
  }

  /** Lets the process exit while no call is pending. */
  idle(): void {
    if (this.pending.size === 0) this.worker?.unref();
  }

  /** Stops the thread (pending calls are rejected). */
  async close(): Promise<void> {
    const worker = this.worker;
    if (worker) await worker.terminate();
  }

  private post(worker: Worker, input: In): Promise<Out> {
    const id = this.nextId++;
    return new Promise<Out>((resolve, reject) => {
      this.pending.set(id, { input, resolve, reject });
      worker.ref();
      worker.postMessage({ id, input });
    });
  }

  /** Moves waiting calls into the thread while it has room (urgent ones first). */
  private fill(): void {
    const window = this.options.window ?? Number.POSITIVE_INFINITY;
    while (this.pending.size < window) {
      const waiter = this.waiting.urgent.shift() ?? this.waiting.plain.shift();
      if (!waiter) return;
      let worker: Worker;
      try {
        worker = this.thread();
      } catch (error) {
        waiter.reject(error instanceof Error ? error : new Error(String(error)));
        continue;
      }
      this.post(worker, waiter.input).then(waiter.resolve, waiter.reject);
    }
  }

  private settle(reply: ThreadReply<Out>): void {
    const waiter = this.pending.get(reply.id);
    if (!waiter) return;
    this.pending.delete(reply.id);
    this.fill();
    this.idle();
    if ('error' in reply) waiter.reject(Object.assign(new Error(reply.error.message), reply.error.code ? { code: reply.error.code } : {}));
    else waiter.resolve(reply.result);
  }
}

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
}

/**
 * Calls into a worker thread that answers each `{ id, input }` with a `ThreadReply`. A reply's
 * error becomes an Error with the same message and `code` (an errno such as ENOSPC survives the
 * hop). Calls pending when the thread dies are rejected, and the next call starts a new thread.
 * The thread keeps the process alive only while calls are pending.
 */
export class ThreadCalls<In, Out> {
  private worker: Worker | null = null;
  private readonly pending = new Map<number, { resolve: (result: Out) => void; reject: (error: Error) => void }>();
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
      this.options.onDeath?.(error, worker);
    };
    worker.on('error', died);
    worker.on('exit', (code) => died(new Error(`the thread exited (code ${code})`)));
    this.worker = worker;
    return worker;
  }

  call(input: In): Promise<Out> {
    const worker = this.thread();
    const id = this.nextId++;
    return new Promise<Out>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.ref();
      worker.postMessage({ id, input });
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

  private settle(reply: ThreadReply<Out>): void {
    const waiter = this.pending.get(reply.id);
    if (!waiter) return;
    this.pending.delete(reply.id);
    this.idle();
    if ('error' in reply) waiter.reject(Object.assign(new Error(reply.error.message), reply.error.code ? { code: reply.error.code } : {}));
    else waiter.resolve(reply.result);
  }
}

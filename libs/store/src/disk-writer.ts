import { Worker } from 'node:worker_threads';

/** One body to compress and write: to `temp` first, then renamed to `path`. */
export interface DiskWrite {
  path: string;
  temp: string;
  body: Uint8Array;
  gzipLevel: number;
  fsync: boolean;
}

/**
 * The thread's code. Only Node built-ins, so it runs the same from the sources and from the
 * compiled package. Synchronous calls are right here: this thread does nothing else, and each
 * asynchronous file call would cost a hand-off to the libuv pool and back.
 */
const THREAD_SOURCE = `
const { parentPort } = require('node:worker_threads');
const fs = require('node:fs');
const path = require('node:path');
const zlib = require('node:zlib');
const dirs = new Set();
parentPort.on('message', (m) => {
  const dir = path.dirname(m.path);
  try {
    const compressed = zlib.gzipSync(m.body, { level: m.gzipLevel });
    if (!dirs.has(dir)) {
      fs.mkdirSync(dir, { recursive: true });
      dirs.add(dir);
    }
    const fd = fs.openSync(m.temp, 'wx');
    try {
      fs.writeFileSync(fd, compressed);
      if (m.fsync) fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(m.temp, m.path);
    parentPort.postMessage({ id: m.id, storedBytes: compressed.length });
  } catch (error) {
    dirs.delete(dir);
    try { fs.rmSync(m.temp, { force: true }); } catch {}
    parentPort.postMessage({ id: m.id, error: { message: String(error && error.message), code: error && error.code } });
  }
});
`;

type Reply = { id: number; storedBytes: number } | { id: number; error: { message: string; code?: string } };

/**
 * Compresses and writes bodies on a thread of its own. On a busy crawler the event loop is the
 * bottleneck: gzip and the open/write/close/rename of two files per page (body and text) cost it
 * about a fifth of its time, and every millisecond it spends there delays the timers that start
 * polite fetches on time. Here the loop only hands the bytes over. Writes keep their order; a
 * write resolves once its file is renamed into place, as before. A failed write rejects with the
 * file system's error code (ENOSPC, EROFS, …) so the store can tell fatal from retryable. The
 * thread never keeps the process alive; if it dies, pending writes fail (retried by their jobs)
 * and the next write starts a new one.
 */
export class DiskWriter {
  private worker: Worker | null = null;
  private readonly pending = new Map<number, { resolve: (storedBytes: number) => void; reject: (error: Error) => void }>();
  private nextId = 0;

  /** Resolves with the compressed size once the body is in place. */
  write(job: DiskWrite): Promise<number> {
    const worker = this.thread();
    const id = this.nextId++;
    return new Promise<number>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.ref();
      worker.postMessage({ id, ...job });
    });
  }

  /** Stops the thread (after the writes the caller waited for). */
  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    if (worker) await worker.terminate();
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    // No inherited flags: the code is CommonJS and needs no loader (`--input-type=module` or
    // a TypeScript loader given to the process would only get in its way).
    const worker = new Worker(THREAD_SOURCE, { eval: true, execArgv: [] });
    worker.unref();
    worker.on('message', (reply: Reply) => this.settle(reply));
    const fail = (error: Error) => {
      if (this.worker === worker) this.worker = null;
      for (const [id, waiter] of this.pending) {
        this.pending.delete(id);
        waiter.reject(error);
      }
    };
    worker.on('error', (error) => fail(error));
    worker.on('exit', (code) => fail(new Error(`the content writer thread exited (code ${code})`)));
    this.worker = worker;
    return worker;
  }

  private settle(reply: Reply): void {
    const waiter = this.pending.get(reply.id);
    if (!waiter) return;
    this.pending.delete(reply.id);
    // Only writes in flight keep the process alive.
    if (this.pending.size === 0) this.worker?.unref();
    if ('error' in reply) waiter.reject(Object.assign(new Error(reply.error.message), reply.error.code ? { code: reply.error.code } : {}));
    else waiter.resolve(reply.storedBytes);
  }
}

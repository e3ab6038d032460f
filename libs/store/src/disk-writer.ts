import { Worker } from 'node:worker_threads';
import { lowerPriorityCode, nameThreadCode, profilingArgs, ThreadCalls } from '@trawl/core';
import type { StoredFormat } from './content-store.js';

/** One body to compress and write: to `temp` first, then renamed to `path`. */
export interface DiskWrite {
  path: string;
  temp: string;
  body: Uint8Array;
  format: StoredFormat;
  fsync: boolean;
}

/**
 * The thread's code. Only Node built-ins, so it runs the same from the sources and from the
 * compiled package. Synchronous calls are right here: this thread does nothing else, and each
 * asynchronous file call would cost a hand-off to the libuv pool and back.
 */
const THREAD_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
${lowerPriorityCode('workerData.nice')}
${nameThreadCode('workerData.name')}
const fs = require('node:fs');
const path = require('node:path');
const zlib = require('node:zlib');
const dirs = new Set();
// As compressSync in content-store.ts (this thread cannot import it).
const compress = (body, { compression, level }) =>
  compression === 'brotli'
    ? zlib.brotliCompressSync(body, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: level, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: body.byteLength } })
    : zlib.gzipSync(body, { level });
parentPort.on('message', ({ id, input: m }) => {
  const dir = path.dirname(m.path);
  try {
    const compressed = compress(m.body, m.format);
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
    parentPort.postMessage({ id, result: compressed.length });
  } catch (error) {
    dirs.delete(dir);
    try { fs.rmSync(m.temp, { force: true }); } catch {}
    parentPort.postMessage({ id, error: { message: String(error && error.message), code: error && error.code } });
  }
});
`;

/**
 * Compresses and writes bodies on a thread of its own. On a busy crawler the event loop is the
 * bottleneck: compression and the open/write/close/rename of two files per page (body and text) cost it
 * about a fifth of its time, and every millisecond it spends there delays the timers that start
 * polite fetches on time. Here the loop only hands the bytes over. Writes keep their order; a
 * write resolves once its file is renamed into place, as before. A failed write rejects with the
 * file system's error code (ENOSPC, EROFS, …) so the store can tell fatal from retryable. The
 * thread never keeps the process alive; if it dies, pending writes fail (retried by their jobs)
 * and the next write starts a new one.
 */
export class DiskWriter {
  // No inherited flags: the code is CommonJS and needs no loader (`--input-type=module` or a
  // TypeScript loader given to the process would only get in its way).
  private readonly calls: ThreadCalls<DiskWrite, number>;

  /** `nice`: the thread's OS priority (see `lowerThreadPriority`); 0 keeps the process's. */
  constructor(nice = 0) {
    this.calls = new ThreadCalls({ spawn: () => new Worker(THREAD_SOURCE, { eval: true, workerData: { nice, name: 'trawl-store' }, execArgv: profilingArgs() }) });
  }

  /** Resolves with the compressed size once the body is in place. */
  write(job: DiskWrite): Promise<number> {
    return this.calls.call(job);
  }

  /** Stops the thread (after the writes the caller waited for). */
  close(): Promise<void> {
    return this.calls.close();
  }
}

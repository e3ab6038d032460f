import type { Worker } from 'node:worker_threads';
import type { Config } from '@trawl/config';
import { ErrorCode, siblingModule, startModuleThread, TrawlError } from '@trawl/core';
import type { Runtime } from '@trawl/runtime';
import type { Logger } from '@trawl/telemetry';
import { fromProcessThread, type ToProcessThread } from './process-thread-messages.js';

const CODES = new Set<string>(Object.values(ErrorCode));
const codeOf = (code: string | null): ErrorCode => (code !== null && CODES.has(code) ? (code as ErrorCode) : ErrorCode.ProcessThread);

/**
 * The process stage on a thread of this process (TRAWL_PROCESS_THREAD, when a process runs both
 * stages). Parsing, fingerprinting, discovering links and recording pages then never run on the
 * event loop whose timers start polite fetches. The thread opens its own runtime and reads the
 * process streams like a process stage in another process would; what it holds when it dies is
 * claimed again (by it when it restarts, or by another). The fetch stage gives it the bodies it
 * just stored (`put`), so it need not read them back from the store.
 */
export class ProcessThread {
  private thread: Worker | null = null;
  private started: Promise<void> | null = null;
  private stopped: ((drained: boolean) => void) | null = null;
  /** The first fatal error of the thread's stage, if any. */
  fatal: TrawlError | null = null;

  constructor(
    private readonly runtime: Runtime,
    private readonly options: { config: Readonly<Config>; logger: Logger; onFatal?: (error: TrawlError) => void },
  ) {}

  /** Starts the thread; resolves once its stage reads the streams. */
  start(): Promise<void> {
    this.started ??= new Promise<void>((resolve, reject) => {
      const { logger } = this.options;
      // Below the event loop that starts fetches (TRAWL_PROCESS_NICE); its analysis and store
      // threads start from it and inherit the priority.
      const thread = startModuleThread(
        siblingModule(import.meta.url, 'process-thread'),
        { config: this.options.config, ...this.runtime.servers, logLevel: logger.level },
        { nice: this.options.config.process.nice, name: 'trawl-process' },
      );
      this.thread = thread;
      thread.unref();
      thread.on('message', (raw: unknown) => {
        // The module loader's own word (see startModuleThread): loaded, or could not load.
        if (typeof raw === 'object' && raw !== null && ('ready' in raw || 'failed' in raw)) {
          if ('failed' in raw) this.fail(new TrawlError(ErrorCode.ProcessThread, `the process thread could not start: ${String(raw.failed)}`, { action: 'fatal' }), reject);
          return;
        }
        const message = fromProcessThread.safeParse(raw);
        if (!message.success) {
          logger.warn('process thread: a message the main thread does not know, ignored');
          return;
        }
        const m = message.data;
        if (m.kind === 'started') resolve();
        else if (m.kind === 'counts') for (const [name, by] of Object.entries(m.counts)) this.runtime.counters.echo(name as keyof typeof m.counts, by);
        else if (m.kind === 'stopped') this.stopped?.(m.drained);
        else this.fail(new TrawlError(codeOf(m.code), m.message, { action: 'fatal' }), reject);
      });
      thread.on('error', (error) => this.fail(new TrawlError(ErrorCode.ProcessThread, `the process thread died: ${error.message}`, { action: 'fatal', cause: error }), reject));
      thread.on('exit', (code) => {
        this.thread = null;
        this.stopped?.(false);
        if (code !== 0 && !this.stopped) this.fail(new TrawlError(ErrorCode.ProcessThread, `the process thread exited with code ${code}`, { action: 'fatal' }), reject);
      });
    });
    return this.started;
  }

  /** Gives the thread a body just stored under `key` (moved when nothing else shares its memory). */
  put(key: string, body: Buffer): void {
    if (!this.thread) return;
    const whole = body.byteOffset === 0 && body.byteLength === body.buffer.byteLength && body.buffer instanceof ArrayBuffer;
    const bytes = whole ? new Uint8Array(body.buffer) : new Uint8Array(body);
    this.send({ kind: 'body', key, bytes }, whole ? [body.buffer as ArrayBuffer] : [bytes.buffer as ArrayBuffer]);
  }

  /** Stops reading and lets the thread finish its pages (up to `timeoutMs`), then ends it. */
  async stop(timeoutMs: number): Promise<{ drained: boolean }> {
    const thread = this.thread;
    if (!thread) return { drained: this.fatal === null };
    const drained = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs + 5000);
      this.stopped = (d) => {
        clearTimeout(timer);
        resolve(d);
      };
      this.send({ kind: 'stop', timeoutMs });
    });
    await thread.terminate();
    return { drained };
  }

  private send(message: ToProcessThread, transfer: ArrayBuffer[] = []): void {
    this.thread?.postMessage(message, transfer);
  }

  private fail(error: TrawlError, reject: (error: Error) => void): void {
    if (this.fatal) return;
    this.fatal = error;
    this.options.logger.error({ err: error }, 'the process stage stopped');
    reject(error);
    this.options.onFatal?.(error);
  }
}

import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Logger } from '@trawl/telemetry';
import { analyzePage, type PageAnalysis, type PageAnalysisInput } from './analyze.js';

/** Where pages are analysed (decoded, parsed, fingerprinted). */
export interface PageAnalyzer {
  analyze(input: PageAnalysisInput): Promise<PageAnalysis>;
  /** Resolves once pages can be analysed without waiting for a start-up. */
  ready(): Promise<void>;
  close(): Promise<void>;
}

/** On the calling thread. */
export const inlineAnalyzer: PageAnalyzer = {
  analyze: async (input) => analyzePage(input),
  ready: async () => undefined,
  close: async () => undefined,
};

/**
 * Starts the thread's module. From the compiled package it is plain JavaScript; from the sources
 * (this file is TypeScript) the thread registers tsx and the `trawl-source` export condition
 * first, as the `trawl` command does for the main thread.
 */
const BOOTSTRAP = `
const { parentPort, workerData } = require('node:worker_threads');
(async () => {
  if (workerData.tsx) {
    (await import(workerData.tsx)).register();
    require('node:module').register('data:text/javascript,' + encodeURIComponent(
      'export async function resolve(s, c, n) { return n(s, { ...c, conditions: [...new Set(["trawl-source", ...c.conditions])] }); }',
    ));
  }
  await import(workerData.entry);
  parentPort.postMessage({ ready: true });
})().catch((error) => {
  parentPort.postMessage({ failed: String((error && error.stack) || error) });
});
`;

type Reply = { ready: true } | { failed: string } | { id: number; result: PageAnalysis } | { id: number; error: string };

function threadEntry(): { entry: string; tsx: string | null } {
  const fromSources = import.meta.url.endsWith('.ts');
  const entry = new URL(fromSources ? './analyze-thread.ts' : './analyze-thread.js', import.meta.url).href;
  return { entry, tsx: fromSources ? tsxApi() : null };
}

/** tsx's ESM API module (its `register()` installs the loader in the thread that calls it). */
function tsxApi(): string {
  // The package maps `tsx/esm/api` to index.mjs for import and index.cjs for require; only the
  // ESM one registers from a thread.
  return pathToFileURL(createRequire(import.meta.url).resolve('tsx/esm/api').replace(/\.cjs$/, '.mjs')).href;
}

/**
 * Analyses pages on a thread of its own. Parsing a page's DOM and fingerprinting its text are
 * the largest CPU cost of a fetched page after the fetch itself; on the worker's event loop they
 * delay the timers that start polite fetches and the round trips every job waits on. Requests
 * are answered in order; the thread never keeps the process alive. Should the thread not start
 * at all (a source checkout without tsx, a sandbox without threads), pages are analysed on the
 * calling thread and this is logged once; should a running thread die, the pages in it fail
 * (their jobs retry) and the next page starts a new thread.
 */
export class ThreadAnalyzer implements PageAnalyzer {
  private worker: Worker | null = null;
  private starting: Promise<boolean> | null = null;
  private inline = false;
  private readonly pending = new Map<number, { resolve: (analysis: PageAnalysis) => void; reject: (error: Error) => void }>();
  private nextId = 0;

  /** `entry`: the thread's module (tests give a missing one to see the fall-back). */
  constructor(
    private readonly logger?: Pick<Logger, 'warn'>,
    private readonly entry?: string,
  ) {}

  /** Whether pages go to a running thread now. */
  get onThread(): boolean {
    return this.worker !== null && !this.inline;
  }

  async analyze(input: PageAnalysisInput): Promise<PageAnalysis> {
    if (this.inline || !(await this.start())) return analyzePage(input);
    const worker = this.worker;
    if (!worker) return this.analyze(input);
    const id = this.nextId++;
    return new Promise<PageAnalysis>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.ref();
      worker.postMessage({ id, input });
    });
  }

  /** Starts the thread now (loading the parser takes a moment), so the first page does not wait. */
  async ready(): Promise<void> {
    if (!this.inline) await this.start();
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    this.starting = null;
    if (worker) await worker.terminate();
  }

  /** Whether pages go to the thread (false: it could not start; they are analysed inline). */
  private start(): Promise<boolean> {
    if (this.starting) return this.starting;
    this.starting = new Promise<boolean>((resolve) => {
      let worker: Worker;
      try {
        const { entry, tsx } = threadEntry();
        worker = new Worker(BOOTSTRAP, { eval: true, workerData: { entry: this.entry ?? entry, tsx }, execArgv: [] });
      } catch (error) {
        this.fallBack(String(error));
        resolve(false);
        return;
      }
      let started = false;
      worker.on('message', (reply: Reply) => {
        if ('ready' in reply) {
          started = true;
          if (this.pending.size === 0) worker.unref();
          resolve(true);
        } else if ('failed' in reply) {
          this.fallBack(reply.failed);
          void worker.terminate();
          resolve(false);
        } else this.settle(reply);
      });
      const died = (error: Error) => {
        if (this.worker === worker) {
          this.worker = null;
          this.starting = null;
        }
        for (const [id, waiter] of this.pending) {
          this.pending.delete(id);
          waiter.reject(error);
        }
        if (!started && !this.inline) {
          this.fallBack(error.message);
          resolve(false);
        }
      };
      worker.on('error', died);
      worker.on('exit', (code) => died(new Error(`the page-analysis thread exited (code ${code})`)));
      this.worker = worker;
    });
    return this.starting;
  }

  private fallBack(reason: string): void {
    this.inline = true;
    this.logger?.warn({ reason }, 'the page-analysis thread could not start: pages are analysed on the event loop');
  }

  private settle(reply: { id: number; result: PageAnalysis } | { id: number; error: string }): void {
    const waiter = this.pending.get(reply.id);
    if (!waiter) return;
    this.pending.delete(reply.id);
    if (this.pending.size === 0) this.worker?.unref();
    if ('error' in reply) waiter.reject(new Error(`page analysis failed: ${reply.error}`));
    else waiter.resolve(reply.result);
  }
}

import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { ThreadCalls } from '@trawl/core';
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
  private readonly calls: ThreadCalls<PageAnalysisInput, PageAnalysis>;
  /** Resolves with whether pages go to the thread once it has started (false: it could not). */
  private starting: Promise<boolean> | null = null;
  private started: ((onThread: boolean) => void) | null = null;
  private inline = false;

  /** `entry`: the thread's module (tests give a missing one to see the fall-back). */
  constructor(
    private readonly logger?: Pick<Logger, 'warn'>,
    entry?: string,
  ) {
    this.calls = new ThreadCalls({
      spawn: () => {
        const paths = threadEntry();
        return new Worker(BOOTSTRAP, { eval: true, workerData: { entry: entry ?? paths.entry, tsx: paths.tsx }, execArgv: [] });
      },
      onMessage: (message, worker) => {
        if (typeof message !== 'object' || message === null) return;
        if ('ready' in message) {
          this.calls.idle();
          this.settleStart(true);
        } else if ('failed' in message) {
          this.fallBack(String(message.failed));
          void worker.terminate();
        }
      },
      // Before its start-up finished: it cannot start here. After: the next page starts a new one.
      onDeath: (error) => (this.started ? this.fallBack(error.message) : (this.starting = null)),
    });
  }

  /** Whether pages go to a running thread now. */
  get onThread(): boolean {
    return this.calls.running && !this.inline;
  }

  async analyze(input: PageAnalysisInput): Promise<PageAnalysis> {
    return this.inline || !(await this.start()) ? analyzePage(input) : this.calls.call(input);
  }

  /** Starts the thread now (loading the parser takes a moment), so the first page does not wait. */
  async ready(): Promise<void> {
    if (!this.inline) await this.start();
  }

  close(): Promise<void> {
    return this.calls.close();
  }

  private start(): Promise<boolean> {
    this.starting ??= new Promise<boolean>((resolve) => {
      this.started = resolve;
      try {
        this.calls.thread();
      } catch (error) {
        this.fallBack(String(error));
      }
    });
    return this.starting;
  }

  private settleStart(onThread: boolean): void {
    const started = this.started;
    this.started = null;
    started?.(onThread);
  }

  private fallBack(reason: string): void {
    if (this.inline) return;
    this.inline = true;
    this.logger?.warn({ reason }, 'the page-analysis thread could not start: pages are analysed on the event loop');
    this.settleStart(false);
  }
}

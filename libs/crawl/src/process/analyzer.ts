import { siblingModule, startModuleThread, ThreadCalls } from '@trawl/core';
import type { Logger } from '@trawl/telemetry';
import type * as Analysis from './analyze.js';
import type { PageAnalysis, PageAnalysisInput } from './analyze.js';

/** Where pages are analysed (decoded, parsed, fingerprinted). */
export interface PageAnalyzer {
  /** `urgent`: the page's host waits on its links; it goes ahead of the pages waiting to be analysed. */
  analyze(input: PageAnalysisInput, options?: { urgent?: boolean }): Promise<PageAnalysis>;
  /** Resolves once pages can be analysed without waiting for a start-up. */
  ready(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The analysis on the calling thread, its module loaded on first use: a process stage whose pages
 * go to the analysis thread never loads the HTML parser (a tenth of a second of CPU at its start).
 */
let analysisModule: Promise<typeof Analysis> | undefined;
async function analyzeHere(input: PageAnalysisInput): Promise<PageAnalysis> {
  analysisModule ??= import('./analyze.js');
  return (await analysisModule).analyzePage(input);
}

/** On the calling thread. */
export const inlineAnalyzer: PageAnalyzer = {
  analyze: analyzeHere,
  ready: async () => undefined,
  close: async () => undefined,
};

/**
 * Pages in the analysis thread at once. The others wait on the calling side, where an urgent page
 * (its host waits on its links) goes ahead of them; in the thread they are answered in order. A
 * few keep the thread busy while the event loop that hands it the next page is busy itself (a
 * page takes a few milliseconds), and an urgent page waits behind at most that many.
 */
export const ANALYSIS_WINDOW = 8;

/**
 * Analyses pages on a thread of its own. Parsing a page's DOM and fingerprinting its text are
 * the largest CPU cost of a fetched page after the fetch itself; on the worker's event loop they
 * delay the timers that start polite fetches and the round trips every job waits on. Requests
 * are answered in order, urgent ones first (`ANALYSIS_WINDOW`); the thread never keeps the
 * process alive. Should the thread not start
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

  /**
   * `entry`: the thread's module (tests give a missing one to see the fall-back); `nice`: the
   * thread's OS priority (see `lowerThreadPriority`), 0 keeping the process's.
   */
  constructor(
    private readonly logger?: Pick<Logger, 'warn'>,
    options: { entry?: string; nice?: number } = {},
  ) {
    const { entry, nice = 0 } = options;
    this.calls = new ThreadCalls({
      spawn: () => startModuleThread(entry ? new URL(entry) : siblingModule(import.meta.url, 'analyze-thread'), null, { nice, name: 'trawl-analysis' }),
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
      window: ANALYSIS_WINDOW,
    });
  }

  /** Whether pages go to a running thread now. */
  get onThread(): boolean {
    return this.calls.running && !this.inline;
  }

  async analyze(input: PageAnalysisInput, options: { urgent?: boolean } = {}): Promise<PageAnalysis> {
    return this.inline || !(await this.start()) ? analyzeHere(input) : this.calls.call(input, options);
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

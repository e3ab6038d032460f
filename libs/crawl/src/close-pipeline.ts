import type { Logger } from '@trawl/telemetry';
import type { CrawlWorkerDeps } from './deps.js';

/** What the stages of one process share, and close once all have stopped. */
export type SharedPipeline = Pick<CrawlWorkerDeps, 'discovery' | 'records' | 'acks' | 'archive' | 'analyzer' | 'counters' | 'render'>;

/**
 * What a worker's stages share, closed once both have stopped: the batchers flushed (discovery,
 * records, acks), the last WARC file finished, the analysis thread ended, the counters written.
 */
export async function closePipeline(deps: SharedPipeline, logger: Logger): Promise<void> {
  await Promise.allSettled([deps.discovery.drain(), deps.records.drain(), deps.acks.drain()]);
  await deps.render?.renderer.close().catch((error: unknown) => logger.warn({ err: error }, 'could not close the headless browser'));
  await deps.archive?.close().catch((error: unknown) => logger.error({ err: error }, 'could not finish the WARC file'));
  await deps.analyzer?.close().catch(() => undefined);
  await deps.counters.flush().catch(() => undefined);
}

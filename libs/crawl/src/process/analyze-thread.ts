import { parentPort } from 'node:worker_threads';
import { analyzePage, type PageAnalysisInput } from './analyze.js';

// The page-analysis thread: answers each { id, input } with { id, result } or { id, error }.
parentPort?.on('message', (message: { id: number; input: PageAnalysisInput }) => {
  try {
    parentPort?.postMessage({ id: message.id, result: analyzePage(message.input) });
  } catch (error) {
    parentPort?.postMessage({ id: message.id, error: { message: `page analysis failed: ${error instanceof Error ? error.message : String(error)}` } });
  }
});

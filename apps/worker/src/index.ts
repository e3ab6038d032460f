export { createCrawlWorker } from './compose.js';
export { runWorkerProcess, type WorkerProcessReport } from './worker-process.js';

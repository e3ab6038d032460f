export { createCrawlWorker, startWorkerService, type WorkerService } from './compose.js';
export { runWorkerProcess, type WorkerProcessReport } from './worker-process.js';

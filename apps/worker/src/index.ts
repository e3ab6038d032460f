export { createCrawlWorker, startWorkerService, type WorkerService, WorkerStages } from './compose.js';
export { runWorkerProcess, type WorkerProcessReport } from './worker-process.js';

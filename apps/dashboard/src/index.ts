export { type DashboardOptions, type DashboardServer, startDashboard } from './server.js';
export { runDashboardProcess } from './process.js';
export { CrawlOperator, type CrawlSnapshot } from './operator.js';
export { TrawlQueueAdapter } from './board.js';

export { memberIdFor, type SchedulerService, startSchedulerService } from './compose.js';
export { runSchedulerProcess } from './scheduler-process.js';

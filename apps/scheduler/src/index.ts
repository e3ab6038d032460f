export { memberIdFor, type SchedulerService, startSchedulerService } from './compose.js';
export { rebuildFromDatabase } from './rebuild.js';
export { runSchedulerProcess } from './scheduler-process.js';

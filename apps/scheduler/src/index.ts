export { memberIdFor, type SchedulerService, startSchedulerService, takeSeenSnapshot } from './compose.js';
export { loadSeenSnapshot, rebuildFromDatabase } from './rebuild.js';
export { runSchedulerProcess } from './scheduler-process.js';

#!/usr/bin/env node
// Container entry point of the dashboard: the same process as `trawl dashboard`.
import { runMain } from '@trawl/runtime';
import { runDashboardProcess } from './process.js';

runMain('trawl-dashboard', process.env, (config, context) => runDashboardProcess(config, context));

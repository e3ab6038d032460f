#!/usr/bin/env node
// Container entry point of a scheduler: the same process as `trawl scheduler`.
import { runMain } from '@trawl/runtime';
import { runSchedulerProcess } from './scheduler-process.js';

runMain('trawl-scheduler', process.env, (config, context) => runSchedulerProcess(config, context));

#!/usr/bin/env node
// Container entry point of a fetch worker: the same process as `trawl worker`.
import { runMain } from '@trawl/runtime';
import { runWorkerProcess } from './worker-process.js';

runMain('trawl-worker', process.env, (config, context) => runWorkerProcess(config, context));

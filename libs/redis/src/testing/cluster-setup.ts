// Global setup of the `redis-cluster` test project (vitest.config.ts): one 3-master Redis Cluster
// for the project's test files. Its address is provided to that project only (vitest's
// provide/inject), never through the environment, which every project's workers would inherit.
import type { TestProject } from 'vitest/node';
import { startTestCluster, type TestCluster } from './cluster.js';

declare module 'vitest' {
  export interface ProvidedContext {
    trawlTestRedisCluster: string;
  }
}

let cluster: TestCluster | undefined;

export async function setup(project: TestProject): Promise<void> {
  cluster = await startTestCluster({ masters: 3 });
  project.provide('trawlTestRedisCluster', cluster.url);
}

export async function teardown(): Promise<void> {
  await cluster?.stop();
}

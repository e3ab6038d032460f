// Global setup of the `redis-cluster` test project (vitest.config.ts): one 3-master Redis Cluster
// for the project's test files, which find it through TRAWL_TEST_REDIS_CLUSTER.
import { startTestCluster, type TestCluster } from './cluster.js';

let cluster: TestCluster | undefined;

export async function setup(): Promise<void> {
  cluster = await startTestCluster({ masters: 3 });
  process.env.TRAWL_TEST_REDIS_CLUSTER = cluster.url;
}

export async function teardown(): Promise<void> {
  await cluster?.stop();
}

import { defineConfig } from 'vitest/config';

// Tests import workspace libraries from their sources (the trawl-source export condition),
// so `npm test` needs no build step.
const conditions = ['trawl-source', 'node', 'default'];

// Test files that only make sense on a Redis Cluster: they run in the redis-cluster project alone.
const CLUSTER_ONLY = ['libs/*/src/**/*.cluster.test.ts', 'libs/*/test/**/*.cluster.test.ts', 'apps/*/test/**/*.cluster.test.ts'];
// Existing suites of the code that owns Redis structures, run a second time against a 3-master
// Redis Cluster (a global setup starts it; @trawl/redis/testing connects to it).
const ALSO_ON_CLUSTER = [
  'libs/frontier/src/frontier.test.ts',
  'libs/frontier/src/handoff.test.ts',
  'libs/frontier/src/borrow.test.ts',
  'libs/frontier/src/host-rank.test.ts',
  'libs/frontier/src/address-gate.test.ts',
  'libs/frontier/src/admission.test.ts',
  'libs/seen/src/bloom.test.ts',
  'libs/seen/src/seen-set.test.ts',
  'libs/queue/src/queues.test.ts',
  'libs/robots/src/cache.test.ts',
  'libs/model/src/policy.test.ts',
  'libs/model/src/discovery.test.ts',
  'libs/dispatch/src/seeds.test.ts',
  'libs/dispatch/src/scheduler.test.ts',
  'libs/dispatch/src/admission.test.ts',
];

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    projects: [
      {
        extends: true,
        test: {
          name: 'trawl',
          include: ['libs/*/src/**/*.test.ts', 'libs/*/test/**/*.test.ts', 'apps/*/src/**/*.test.ts', 'apps/*/test/**/*.test.ts'],
          exclude: ['**/node_modules/**', ...CLUSTER_ONLY],
        },
      },
      {
        extends: true,
        test: {
          name: 'redis-cluster',
          include: [...CLUSTER_ONLY, ...ALSO_ON_CLUSTER],
          globalSetup: ['libs/redis/src/testing/cluster-setup.ts'],
        },
      },
    ],
  },
});

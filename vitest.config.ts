import { defineConfig } from 'vitest/config';

// Tests import workspace libraries from their sources (the trawl-source export condition),
// so `npm test` needs no build step.
const conditions = ['trawl-source', 'node', 'default'];

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: {
    include: ['libs/*/src/**/*.test.ts', 'libs/*/test/**/*.test.ts', 'apps/*/src/**/*.test.ts', 'apps/*/test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});

import { isTrawlError } from '@trawl/core';
import { describe, expect, it } from 'vitest';
import { startEmbeddedRedis } from './index.js';

describe('startEmbeddedRedis without redis-server', () => {
  it('stops with every way to get Redis', async () => {
    const error = await startEmbeddedRedis({ dir: '.trawl/test-embedded-missing', binary: 'trawl-no-such-redis-server' }).catch((e: unknown) => e);
    expect(isTrawlError(error) && error.code).toBe('ERR_EMBEDDED_START');
    const message = (error as Error).message;
    expect(message).toMatch(/nothing answers at 127\.0\.0\.1:6379 and trawl-no-such-redis-server is not installed/);
    for (const way of ['sudo apt install redis-server', 'brew install redis', 'bash scripts/setup.sh', 'docker run', 'REDIS_URL']) expect(message).toContain(way);
  });
});

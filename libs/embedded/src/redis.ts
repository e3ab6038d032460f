import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ErrorCode, sleep, TrawlError } from '@trawl/core';
import { lockDataDir } from './lock.js';
import { freePort, redisAnswers } from './net.js';
import { type ParentDeathMethod, spawnTiedToParent } from './parent-death.js';
import type { EmbeddedServer } from './server.js';

/** What to do when no Redis answers and none can be started: every way to get one. */
export function missingRedisMessage(binary = 'redis-server'): string {
  return [
    `trawl needs Redis: nothing answers at 127.0.0.1:6379 and ${binary} is not installed, so no private one can be started.`,
    '  Debian/Ubuntu:    sudo apt install redis-server',
    '  macOS:            brew install redis',
    '  a trawl checkout: bash scripts/setup.sh (installs and starts Redis and PostgreSQL)',
    '  Docker:           docker run -d -p 127.0.0.1:6379:6379 redis:8',
    '  or point REDIS_URL at a Redis server you have.',
    'PostgreSQL is optional here: without one, an embedded PostgreSQL (PGlite) starts by itself.',
  ].join('\n');
}

export function hasRedisServer(binary = 'redis-server'): boolean {
  return spawnSync(binary, ['--version'], { stdio: 'ignore' }).status === 0;
}

export interface EmbeddedRedisOptions {
  dir: string;
  binary?: string;
  startTimeoutMs?: number;
  /** How the child is tied to this process's life (default: setpriv where it works, else a watchdog). */
  parentDeath?: ParentDeathMethod;
}

/**
 * Starts a private `redis-server` child on a free loopback port with its data (append-only
 * file) under `dir`, so an interrupted crawl resumes where it stopped. The directory is locked
 * for this process (`<dir>.lock`), and the child dies with this process even when it is killed
 * with SIGKILL.
 */
export async function startEmbeddedRedis(options: EmbeddedRedisOptions): Promise<EmbeddedServer> {
  const binary = options.binary ?? 'redis-server';
  if (!hasRedisServer(binary)) {
    throw new TrawlError(ErrorCode.EmbeddedStart, missingRedisMessage(binary), { action: 'fatal' });
  }
  const dir = resolve(options.dir);
  mkdirSync(dir, { recursive: true });
  const lock = lockDataDir(dir, 'the embedded Redis');
  try {
    const port = await freePort();
    const { child } = spawnTiedToParent(
      binary,
      ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--save', '', '--logfile', join(dir, 'redis.log'), '--daemonize', 'no'],
      options.parentDeath,
    );
    let exited = false;
    child.once('exit', () => {
      exited = true;
    });
    if (child.pid !== undefined) lock.addPid(child.pid);
    const deadline = Date.now() + (options.startTimeoutMs ?? 10_000);
    while (!(await redisAnswers(port, 200))) {
      if (exited || Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new TrawlError(ErrorCode.EmbeddedStart, `embedded redis-server did not start (see ${join(dir, 'redis.log')})`, { action: 'fatal' });
      }
      await sleep(50);
    }
    return {
      url: `redis://127.0.0.1:${port}`,
      childPid: child.pid,
      async stop() {
        if (!exited) {
          const gone = new Promise<void>((r) => child.once('exit', () => r()));
          child.kill('SIGTERM');
          await Promise.race([gone, sleep(5000)]);
          if (!exited) child.kill('SIGKILL');
        }
        lock.release();
      },
    };
  } catch (error) {
    lock.release();
    throw error;
  }
}

import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { ErrorCode, sleep, TrawlError } from '@trawl/core';

/** A server this process started; `stop` shuts it down. */
export interface EmbeddedServer {
  url: string;
  stop(): Promise<void>;
}

/** A free TCP port on 127.0.0.1 (bind to 0, read it, release it). */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

function answers(port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    const finish = (ok: boolean) => {
      socket.destroy();
      done(ok);
    };
    socket.setTimeout(timeoutMs, () => finish(false));
    socket.once('connect', () => {
      socket.write('PING\r\n');
    });
    socket.once('data', (data) => finish(data.toString().startsWith('+PONG')));
    socket.once('error', () => finish(false));
  });
}

export function hasRedisServer(binary = 'redis-server'): boolean {
  return spawnSync(binary, ['--version'], { stdio: 'ignore' }).status === 0;
}

/** What to do when no Redis answers and none can be started: every way to get one. */
export function missingRedisMessage(binary = 'redis-server'): string {
  return [
    `trawl needs Redis: nothing answers at 127.0.0.1:6379 and ${binary} is not installed, so no private one can be started.`,
    '  Debian/Ubuntu:   sudo apt install redis-server',
    '  macOS:           brew install redis',
    '  a trawl checkout: bash scripts/setup.sh (installs and starts Redis and PostgreSQL)',
    '  Docker:          docker run -d -p 127.0.0.1:6379:6379 redis:8',
    '  or point REDIS_URL at a Redis server you have.',
    'PostgreSQL is optional here: without one, an embedded PostgreSQL (PGlite) starts by itself.',
  ].join('\n');
}

/**
 * Starts a private `redis-server` child on a free loopback port with its data (append-only
 * file) under `dir`, so an interrupted crawl resumes where it stopped.
 */
export async function startEmbeddedRedis(options: { dir: string; binary?: string; startTimeoutMs?: number }): Promise<EmbeddedServer> {
  const binary = options.binary ?? 'redis-server';
  if (!hasRedisServer(binary)) {
    throw new TrawlError(ErrorCode.EmbeddedStart, missingRedisMessage(binary), { action: 'fatal' });
  }
  const dir = resolve(options.dir);
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const child = spawn(
    binary,
    ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--save', '', '--logfile', join(dir, 'redis.log'), '--daemonize', 'no'],
    { stdio: 'ignore' },
  );
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  const deadline = Date.now() + (options.startTimeoutMs ?? 10_000);
  while (!(await answers(port, 200))) {
    if (exited || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new TrawlError(ErrorCode.EmbeddedStart, `embedded redis-server did not start (see ${join(dir, 'redis.log')})`, { action: 'fatal' });
    }
    await sleep(50);
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    async stop() {
      if (exited) return;
      const gone = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill('SIGTERM');
      await Promise.race([gone, sleep(5000)]);
      if (!exited) child.kill('SIGKILL');
    },
  };
}

/**
 * Starts PGlite (PostgreSQL compiled to WebAssembly, in this process) with its data under
 * `dir`, served over the PostgreSQL protocol on a loopback port so the normal driver can use it.
 * It runs one query at a time: right for a single-process crawl, not for many workers.
 */
export async function startEmbeddedPostgres(options: { dir: string; maxConnections?: number }): Promise<EmbeddedServer> {
  const dir = resolve(options.dir);
  mkdirSync(dir, { recursive: true });
  let db: PGlite;
  try {
    db = await PGlite.create(dir);
  } catch (error) {
    throw new TrawlError(ErrorCode.EmbeddedStart, `embedded PostgreSQL (PGlite) could not open ${dir}: ${(error as Error).message}`, {
      action: 'fatal',
      cause: error,
    });
  }
  const port = await freePort();
  const server = new PGLiteSocketServer({ db, port, host: '127.0.0.1', maxConnections: options.maxConnections ?? 32 });
  await server.start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    async stop() {
      await server.stop();
      await db.close();
    },
  };
}

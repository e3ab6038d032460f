import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { ErrorCode, TrawlError } from '@trawl/core';
import { lockDataDir } from './lock.js';
import { freePort } from './net.js';
import type { EmbeddedServer } from './server.js';

/**
 * Starts PGlite (PostgreSQL compiled to WebAssembly, in this process) with its data under
 * `dir`, served over the PostgreSQL protocol on a loopback port so the normal driver can use it.
 * It runs one query at a time: right for a single-process crawl, not for many workers. The
 * directory is locked for this process (`<dir>.lock`).
 */
export async function startEmbeddedPostgres(options: { dir: string; maxConnections?: number }): Promise<EmbeddedServer> {
  const dir = resolve(options.dir);
  mkdirSync(dir, { recursive: true });
  const lock = lockDataDir(dir, 'the embedded PostgreSQL');
  let db: PGlite;
  try {
    db = await PGlite.create(dir);
  } catch (error) {
    lock.release();
    throw new TrawlError(ErrorCode.EmbeddedStart, `embedded PostgreSQL (PGlite) could not open ${dir}: ${(error as Error).message}`, {
      action: 'fatal',
      cause: error,
    });
  }
  try {
    const port = await freePort();
    const server = new PGLiteSocketServer({ db, port, host: '127.0.0.1', maxConnections: options.maxConnections ?? 32 });
    await server.start();
    return {
      url: `postgres://postgres@127.0.0.1:${port}/postgres`,
      async stop() {
        try {
          await server.stop();
          await db.close();
        } finally {
          lock.release();
        }
      },
    };
  } catch (error) {
    await db.close().catch(() => undefined);
    lock.release();
    throw error;
  }
}

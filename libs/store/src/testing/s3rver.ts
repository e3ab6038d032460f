import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { S3ClientConfig } from '@aws-sdk/client-s3';
import S3rver from 's3rver';

/** s3rver's fixed account: every request is signed with it. */
export const S3RVER_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } as const;

export interface TestS3 {
  /** `http://127.0.0.1:<port>` */
  endpoint: string;
  port: number;
  /** Client settings that reach this server (credentials, path style, region). */
  client: Partial<S3ClientConfig>;
  /**
   * Objects created so far (PUTs and completed multipart uploads), from the server's events;
   * with `except`, leaving out keys that start with it (e.g. `seen-snapshots/`).
   */
  countPuts(options?: { except?: string }): number;
  /** Stops the server (its port is free again) without removing its data. */
  stop(): Promise<void>;
  /** Starts it again on the same port and data directory. */
  start(): Promise<void>;
  /** Stops the server and removes its data directory. */
  close(): Promise<void>;
}

/**
 * A real S3-protocol server (s3rver) on 127.0.0.1 with a free port and a private data
 * directory, with the given buckets created.
 */
export async function startTestS3(buckets: readonly string[] = []): Promise<TestS3> {
  const directory = await mkdtemp(join(tmpdir(), 'trawl-s3rver-'));
  const created: string[] = [];
  const make = (port: number): S3rver => {
    const instance = new S3rver({ address: '127.0.0.1', port, silent: true, directory, configureBuckets: buckets.map((name) => ({ name, configs: [] })) });
    // s3rver is a Koa application; its typings omit the EventEmitter half.
    (instance as unknown as NodeJS.EventEmitter).on('event', (event: { Records?: { eventName?: string; s3?: { object?: { key?: string } } }[] }) => {
      const record = event.Records?.find((r) => r.eventName?.startsWith('ObjectCreated:'));
      if (record) created.push(decodeURIComponent(record.s3?.object?.key ?? ''));
    });
    return instance;
  };
  let server = make(0);
  const { port } = await server.run();
  let running = true;
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    port,
    client: { endpoint, region: 'us-east-1', forcePathStyle: true, credentials: S3RVER_CREDENTIALS },
    countPuts: (options = {}) => created.filter((key) => options.except === undefined || !key.startsWith(options.except)).length,
    async stop() {
      if (!running) return;
      running = false;
      await server.close();
    },
    async start() {
      if (running) return;
      server = make(port);
      await server.run();
      running = true;
    },
    async close() {
      if (running) await server.close();
      running = false;
      await rm(directory, { recursive: true, force: true });
    },
  };
}

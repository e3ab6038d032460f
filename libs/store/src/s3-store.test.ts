import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server, type Socket, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import {
  DeleteObjectsCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { loadConfig } from '@trawl/config';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { contentHash } from './content-store.js';
import { createContentStore } from './create.js';
import { LocalContentStore } from './local-store.js';
import { S3ContentStore } from './s3-store.js';
import { startTestS3, storeContract } from './testing/index.js';

const BUCKET = 'trawl-test';
const s3 = await startTestS3([BUCKET]);
const admin = new S3Client({ ...s3.client, requestChecksumCalculation: 'WHEN_REQUIRED' });

afterAll(async () => {
  admin.destroy();
  await s3.close();
});

/** Every object under `prefix`, removed (each store under test writes under its own prefix). */
async function dropPrefix(prefix: string): Promise<void> {
  for (;;) {
    const listed = await admin.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix }));
    const keys = (listed.Contents ?? []).flatMap((o) => (o.Key === undefined ? [] : [{ Key: o.Key }]));
    if (keys.length === 0) return;
    await admin.send(new DeleteObjectsCommand({ Bucket: BUCKET, Delete: { Objects: keys } }));
  }
}

async function objectBytes(key: string): Promise<Buffer> {
  const object = await admin.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
  return Buffer.from(await (object.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray());
}

const newPrefix = (): string => `t-${randomUUID().slice(0, 8)}/`;

storeContract('S3ContentStore', async () => {
  const prefix = newPrefix();
  return { store: new S3ContentStore({ bucket: BUCKET, prefix, client: s3.client }), cleanup: () => dropPrefix(prefix) };
});

storeContract('S3ContentStore with a bare prefix, gzip level 1, one attempt', async () => {
  const prefix = `bare-${randomUUID().slice(0, 8)}`;
  return {
    store: new S3ContentStore({ bucket: BUCKET, prefix, compression: 'gzip', gzipLevel: 1, maxAttempts: 1, client: s3.client }),
    cleanup: () => dropPrefix(`${prefix}/`),
  };
});

describe('S3ContentStore against s3rver', () => {
  const closers: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });
  const open = (options: Partial<ConstructorParameters<typeof S3ContentStore>[0]> = {}): S3ContentStore => {
    const prefix = options.prefix ?? newPrefix();
    const store = new S3ContentStore({ bucket: BUCKET, prefix, client: s3.client, ...options });
    closers.push(() => store.close(), () => dropPrefix(prefix));
    return store;
  };

  it('lays bodies out as <prefix><hh>/<sha256>.br, plain brotli of the body (.gz, gzip, under gzip)', async () => {
    for (const compression of ['brotli', 'gzip'] as const) {
      const prefix = newPrefix();
      const store = open({ prefix, ...(compression === 'gzip' ? { compression } : {}) });
      const body = Buffer.from('<p>layout</p>');
      const hash = contentHash(body);
      await store.put(body);
      expect(store.objectKey(hash)).toBe(`${prefix}${hash.slice(0, 2)}/${hash}${compression === 'gzip' ? '.gz' : '.br'}`);
      const listed = await admin.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix }));
      expect(listed.Contents?.map((o) => o.Key)).toEqual([store.objectKey(hash)]);
      const bytes = await objectBytes(store.objectKey(hash));
      expect(compression === 'gzip' ? gunzipSync(bytes) : brotliDecompressSync(bytes)).toEqual(body);
    }
  });

  it('reads the objects a store of the other format wrote under the same prefix', async () => {
    const prefix = newPrefix();
    const gzipped = open({ prefix, compression: 'gzip' });
    const body = Buffer.from('<p>stored as gzip before the default changed</p>');
    const { key } = await gzipped.put(body);
    const brotli = open({ prefix });
    expect(await brotli.has(key)).toBe(true);
    expect(await brotli.get(key)).toEqual(body);
    const missing = `sha256:${contentHash(Buffer.from('never stored'))}`;
    expect(await brotli.has(missing)).toBe(false);
    expect(await brotli.get(missing)).toBeNull();
  });

  it('a body another process stored is found by HEAD: nothing is uploaded again', async () => {
    const prefix = newPrefix();
    const first = open({ prefix });
    const body = Buffer.from('stored by another worker');
    const stored = await first.put(body);
    const uploads = s3.countPuts();
    const second = open({ prefix }); // a fresh process: its cache knows nothing
    expect(await second.put(body)).toEqual({ key: stored.key, contentHash: stored.contentHash, storedBytes: 0, existed: true });
    expect(s3.countPuts()).toBe(uploads);
    expect(await second.get(stored.key)).toEqual(body);
  });

  it('two processes racing on one new body both upload it; the object stays whole', async () => {
    const prefix = newPrefix();
    const a = open({ prefix });
    const b = open({ prefix });
    const body = randomBytes(300 * 1024);
    const [ra, rb] = await Promise.all([a.put(body), b.put(body)]);
    expect(ra?.key).toBe(rb?.key);
    expect((await open({ prefix }).get(ra.key))?.equals(body)).toBe(true);
  });

  it('is interchangeable with the local store: same key, hash and bytes', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'trawl-store-swap-'));
    closers.push(() => rm(dir, { recursive: true, force: true }));
    const local = new LocalContentStore({ dir, fsync: false });
    closers.push(() => local.close());
    const store = open();
    const body = Buffer.from('<html><body>moved from disk to S3</body></html>'.repeat(50));
    const onDisk = await local.put(body);
    const inBucket = await store.put(body);
    expect(inBucket.key).toBe(onDisk.key);
    expect(inBucket.contentHash).toBe(onDisk.contentHash);
    const hash = onDisk.contentHash;
    expect(await objectBytes(store.objectKey(hash))).toEqual(await readFile(join(dir, hash.slice(0, 2), `${hash}.br`)));

    // A file copied from the directory into the bucket is a stored body.
    const other = Buffer.from('only on disk');
    const copied = await local.put(other);
    await admin.send(
      new PutObjectCommand({
        Bucket: BUCKET,
        Key: store.objectKey(copied.contentHash),
        Body: await readFile(join(dir, copied.contentHash.slice(0, 2), `${copied.contentHash}.br`)),
      }),
    );
    expect(await store.get(copied.key)).toEqual(other);
  });

  it('a corrupt object is an ERR_STORE failure, not a page', async () => {
    const store = open();
    const body = Buffer.from('will be corrupted');
    const { key, contentHash: hash } = await store.put(body);
    await admin.send(new PutObjectCommand({ Bucket: BUCKET, Key: store.objectKey(hash), Body: Buffer.from([0xff, 0xff, 0xff, 0xff, 0x00, 0x01]) }));
    await expect(store.get(key)).rejects.toMatchObject({ code: 'ERR_STORE', action: 'fail' });
  });

  it('a missing bucket is fatal and named, at check() and at put()', async () => {
    const store = open({ bucket: 'no-such-bucket' });
    await expect(store.check()).rejects.toMatchObject({ code: 'ERR_STORE_BUCKET_MISSING', action: 'fatal', message: expect.stringContaining('"no-such-bucket"') });
    await expect(store.put(Buffer.from('x'))).rejects.toMatchObject({ code: 'ERR_STORE_BUCKET_MISSING', action: 'fatal' });
    await expect(store.get(`sha256:${'0'.repeat(64)}`)).rejects.toMatchObject({ code: 'ERR_STORE_BUCKET_MISSING' });
  });

  it('refused credentials are fatal and name the bucket', async () => {
    // s3rver checks the access key id of a V4 signature, not the signature itself.
    const store = open({ client: { ...s3.client, credentials: { accessKeyId: 'NOT-A-KEY', secretAccessKey: 'S3RVER' } } });
    await expect(store.check()).rejects.toMatchObject({ code: 'ERR_STORE_ACCESS_DENIED', action: 'fatal', message: expect.stringContaining(`"${BUCKET}"`) });
    await expect(store.put(Buffer.from('x'))).rejects.toMatchObject({ code: 'ERR_STORE_ACCESS_DENIED', action: 'fatal' });
  });

  it('retries a dropped connection with back-off (the SDK strategy, maxAttempts)', async () => {
    const proxy = await dropFirstConnections(s3.port, 2);
    closers.push(() => proxy.close());
    const store = open({ client: { ...s3.client, endpoint: `http://127.0.0.1:${proxy.port}` }, maxAttempts: 4 });
    const body = Buffer.from('survives two resets');
    const result = await store.put(body);
    expect(result.existed).toBe(false);
    expect(proxy.dropped()).toBe(2);
    expect(await store.get(result.key)).toEqual(body);
  });

  it('gives up after maxAttempts with a retryable ERR_STORE', async () => {
    const proxy = await dropFirstConnections(s3.port, 2);
    closers.push(() => proxy.close());
    const store = open({ client: { ...s3.client, endpoint: `http://127.0.0.1:${proxy.port}` }, maxAttempts: 2 });
    await expect(store.put(Buffer.from('two resets, two tries'))).rejects.toMatchObject({ code: 'ERR_STORE', action: 'retry' });
    expect(proxy.dropped()).toBe(2);
  });

  it('a server that is down then back: the job fails retryably, the next put works', async () => {
    const store = open({ maxAttempts: 1 });
    await s3.stop();
    try {
      await expect(store.put(Buffer.from('while down'))).rejects.toMatchObject({ code: 'ERR_STORE', action: 'retry' });
    } finally {
      await s3.start();
    }
    const result = await store.put(Buffer.from('while down'));
    expect(result.existed).toBe(false);
  });

  it('rejects bad options with ERR_CONFIG_INVALID', () => {
    expect(() => new S3ContentStore({ bucket: '' })).toThrow(expect.objectContaining({ code: 'ERR_CONFIG_INVALID', message: expect.stringContaining('TRAWL_S3_BUCKET') }));
    expect(() => new S3ContentStore({ bucket: 'b', gzipLevel: 11 })).toThrow(expect.objectContaining({ code: 'ERR_CONFIG_INVALID' }));
    expect(() => new S3ContentStore({ bucket: 'b', brotliQuality: 12 })).toThrow(expect.objectContaining({ code: 'ERR_CONFIG_INVALID', message: expect.stringContaining('brotliQuality') }));
    expect(() => new S3ContentStore({ bucket: 'b', maxAttempts: 0 })).toThrow(expect.objectContaining({ code: 'ERR_CONFIG_INVALID' }));
  });
});

describe('createContentStore', () => {
  it('builds the local store by default and the S3 store for TRAWL_CONTENT_STORE=s3', async () => {
    const local = createContentStore(loadConfig({ env: { TRAWL_CONTENT_DIR: join(tmpdir(), 'unused') } }));
    expect(local).toBeInstanceOf(LocalContentStore);
    await local.close();

    const prefix = newPrefix();
    const config = loadConfig({
      env: { TRAWL_CONTENT_STORE: 's3', TRAWL_S3_BUCKET: BUCKET, TRAWL_S3_PREFIX: prefix, TRAWL_S3_ENDPOINT: s3.endpoint, TRAWL_S3_REGION: 'us-east-1', TRAWL_S3_FORCE_PATH_STYLE: 'true' },
    });
    const store = createContentStore(config, { credentials: s3.client.credentials });
    expect(store).toBeInstanceOf(S3ContentStore);
    await store.check();
    const { key } = await store.put(Buffer.from('via the factory'));
    expect(await store.get(key)).toEqual(Buffer.from('via the factory'));
    await store.close();
    await dropPrefix(prefix);
  });
});

/** A TCP proxy to 127.0.0.1:`target` that resets the first `count` connections it accepts. */
async function dropFirstConnections(target: number, count: number): Promise<{ port: number; dropped: () => number; close: () => Promise<void> }> {
  let dropped = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    if (dropped < count) {
      dropped += 1;
      client.resetAndDestroy();
      return;
    }
    const upstream = connect(target, '127.0.0.1');
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    client.pipe(upstream).pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('proxy has no port');
  return {
    port: address.port,
    dropped: () => dropped,
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

import { createServer, type Server, type Socket, connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Database, isTransientDbError } from './database.js';
import { discovered, fp, TEST_DATABASE_URL, testDatabase } from './testing/index.js';

/**
 * PostgreSQL going away and coming back, as a restart looks to a client: a TCP proxy in front of
 * the test server that refuses connections, then cuts the open ones, then accepts again. A
 * statement issued meanwhile waits and succeeds once the server answers (TRAWL_DB_RETRY_MS),
 * instead of failing the fetch job that issued it (which would fetch the page again).
 */
class Proxy {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  constructor(
    readonly port: number,
    private readonly target: { host: string; port: number },
  ) {}

  static async start(target: { host: string; port: number }): Promise<Proxy> {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as { port: number }).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const proxy = new Proxy(port, target);
    await proxy.open();
    return proxy;
  }

  async open(): Promise<void> {
    this.server = createServer((client) => {
      const upstream = connect(this.target.port, this.target.host);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => this.server?.listen(this.port, '127.0.0.1', resolve));
  }

  /** Refuse new connections and cut the open ones. */
  async close(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  }
}

const target = new URL(TEST_DATABASE_URL);
let proxy: Proxy;
let setup: Awaited<ReturnType<typeof testDatabase>>;

beforeAll(async () => {
  proxy = await Proxy.start({ host: target.hostname, port: Number(target.port || 5432) });
  setup = await testDatabase('retry');
});
afterAll(async () => {
  await proxy.close();
  await setup.cleanup();
});

function viaProxy(retryMs: number, retries: unknown[] = []): Database {
  const url = new URL(TEST_DATABASE_URL);
  url.port = String(proxy.port);
  return new Database({ url: url.toString(), schema: setup.schema, poolSize: 2, retryMs, onRetry: (error) => retries.push(error) });
}

describe('statements while PostgreSQL restarts', () => {
  it('wait for the server and succeed, the connections cut mid-way replaced', async () => {
    const retries: unknown[] = [];
    const db = viaProxy(10_000, retries);
    try {
      await db.insertDiscovered([discovered('http://retry.example/1')]);
      await proxy.close(); // the server goes down: open connections die, new ones are refused
      const pending = db.insertDiscovered([discovered('http://retry.example/2')]);
      await new Promise((r) => setTimeout(r, 700));
      await proxy.open(); // and comes back
      expect((await pending).inserted).toHaveLength(1);
      expect(retries.length).toBeGreaterThan(0);
      expect(retries.every(isTransientDbError)).toBe(true);
      expect((await setup.db.urlStates([fp('http://retry.example/1'), fp('http://retry.example/2')])).size).toBe(2);
    } finally {
      await db.close();
    }
  });

  it('give up after TRAWL_DB_RETRY_MS with the connection error, and never retry a statement PostgreSQL refuses', async () => {
    const db = viaProxy(600);
    try {
      await proxy.close();
      const started = Date.now();
      await expect(db.urlStates([fp('http://retry.example/1')])).rejects.toSatisfy(isTransientDbError);
      expect(Date.now() - started).toBeLessThan(3000);
      await proxy.open();
      const retries: unknown[] = [];
      const strict = viaProxy(5000, retries);
      await expect(strict.pool.query('SELECT * FROM no_such_table')).rejects.toMatchObject({ code: '42P01' });
      expect(retries).toEqual([]);
      await strict.close();
    } finally {
      await db.close();
    }
  });
});

describe('isTransientDbError', () => {
  it.each([
    [{ code: 'ECONNREFUSED' }, true],
    [{ code: '57P01' }, true],
    [{ code: '57P03' }, true],
    [{ code: '08006' }, true],
    [{ code: '40001' }, true],
    [new Error('Connection terminated unexpectedly'), true],
    [{ code: '23505' }, false],
    [{ code: '22021' }, false],
    [{ code: '42P01' }, false],
    [new Error('syntax'), false],
  ])('%j → %s', (error, transient) => {
    expect(isTransientDbError(error)).toBe(transient);
  });
});

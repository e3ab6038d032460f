import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis as StandaloneRedis } from 'ioredis';
import { createRedis, type RedisClient, type RedisConnectOptions } from '../connection.js';

/** One master of a test cluster. */
export interface ClusterNodeInfo {
  port: number;
  busPort: number;
  /** First and last hash slot this node owns. */
  slots: [number, number];
  url: string;
}

/** A Redis Cluster of private `redis-server` processes on loopback, for tests. */
export interface TestCluster {
  /** The seed-node list, as REDIS_URL takes it in cluster mode. */
  url: string;
  nodes: ClusterNodeInfo[];
  /** A new Cluster client (close it yourself). */
  connect(options?: Omit<RedisConnectOptions, 'cluster'>): RedisClient;
  /** Stops every node and removes the data directory. */
  stop(): Promise<void>;
}

const SLOTS = 16_384;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

async function until(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > end) throw new Error(`test cluster: ${what} not reached within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Starts `masters` redis-server processes with `--cluster-enabled yes` on free loopback ports
 * (nothing saved to disk, a temporary directory), splits the 16384 slots between them
 * (CLUSTER ADDSLOTSRANGE), joins them (CLUSTER MEET), and waits until every node reports
 * `cluster_state:ok` and knows every master. Needs `redis-server` ≥ 7.0 on PATH.
 */
export async function startTestCluster(options: { masters?: number; binary?: string; timeoutMs?: number } = {}): Promise<TestCluster> {
  const masters = options.masters ?? 3;
  const binary = options.binary ?? 'redis-server';
  const timeoutMs = options.timeoutMs ?? 20_000;
  const version = spawnSync(binary, ['--version'], { encoding: 'utf8' });
  if (version.status !== 0) throw new Error(`the Redis Cluster tests need ${binary} (apt install redis-server, brew install redis)`);
  // CLUSTER ADDSLOTSRANGE and --cluster-port arrived in Redis 7.0.
  const major = Number(/v=(\d+)\./.exec(version.stdout)?.[1] ?? 0);
  if (major < 7) throw new Error(`the Redis Cluster tests need ${binary} 7.0 or later, found: ${version.stdout.trim()}`);
  const dir = mkdtempSync(join(tmpdir(), 'trawl-cluster-'));
  const children: ChildProcess[] = [];
  const admins: StandaloneRedis[] = [];
  const nodes: ClusterNodeInfo[] = [];
  const stop = async () => {
    for (const admin of admins) admin.disconnect();
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
            child.once('exit', () => {
              clearTimeout(timer);
              resolve();
            });
            child.kill('SIGTERM');
          }),
      ),
    );
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const used = new Set<number>();
    const pick = async () => {
      for (;;) {
        const port = await freePort();
        if (!used.has(port)) {
          used.add(port);
          return port;
        }
      }
    };
    for (let i = 0; i < masters; i += 1) {
      const port = await pick();
      const busPort = await pick();
      const first = Math.floor((SLOTS * i) / masters);
      const last = Math.floor((SLOTS * (i + 1)) / masters) - 1;
      nodes.push({ port, busPort, slots: [first, last], url: `redis://127.0.0.1:${port}` });
      // prettier-ignore
      const child = spawn(binary, [
        '--port', String(port), '--cluster-port', String(busPort), '--bind', '127.0.0.1',
        '--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`, '--cluster-node-timeout', '5000',
        '--save', '', '--appendonly', 'no', '--dir', dir, '--logfile', `redis-${port}.log`, '--daemonize', 'no',
      ], { stdio: 'ignore' });
      children.push(child);
      const admin = new StandaloneRedis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: (n) => (n > 100 ? null : 50) });
      admin.on('error', () => undefined);
      admins.push(admin);
    }
    await Promise.all(admins.map((admin, i) => until(async () => (await admin.ping()) === 'PONG', timeoutMs, `node ${nodes[i]?.port} answering`)));
    // What `redis-cli --cluster create` does: distinct config epochs, slots, then MEET.
    await Promise.all(
      admins.map(async (admin, i) => {
        const node = nodes[i] as ClusterNodeInfo;
        await admin.call('CLUSTER', 'SET-CONFIG-EPOCH', String(i + 1));
        await admin.call('CLUSTER', 'ADDSLOTSRANGE', String(node.slots[0]), String(node.slots[1]));
      }),
    );
    const seed = admins[0] as StandaloneRedis;
    for (const node of nodes.slice(1)) await seed.call('CLUSTER', 'MEET', '127.0.0.1', String(node.port), String(node.busPort));
    await Promise.all(
      admins.map((admin) =>
        until(
          async () => {
            const info = String(await admin.call('CLUSTER', 'INFO'));
            return /cluster_state:ok/.test(info) && new RegExp(`cluster_known_nodes:${masters}\\b`).test(info) && new RegExp(`cluster_size:${masters}\\b`).test(info);
          },
          timeoutMs,
          'cluster_state:ok on every node',
        ),
      ),
    );
  } catch (error) {
    const logs = nodes.map((n) => {
      try {
        return `--- redis-${n.port}.log\n${readFileSync(join(dir, `redis-${n.port}.log`), 'utf8').slice(-2000)}`;
      } catch {
        return '';
      }
    });
    await stop();
    throw new Error(`${(error as Error).message}\n${logs.join('\n')}`, { cause: error });
  }
  const url = nodes.map((n) => n.url).join(',');
  return {
    url,
    nodes,
    connect: (connectOptions = {}) => createRedis(url, { ...connectOptions, cluster: true }),
    stop,
  };
}

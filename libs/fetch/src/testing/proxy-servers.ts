// Real proxy servers for the proxy tests: Debian's squid (HTTP proxy, CONNECT) and microsocks
// (SOCKS5), each started on a free loopback port with a temporary config, and its log. Nothing is
// skipped: a missing binary fails the test, saying how to install it.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { accessSync, chmodSync, constants, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { type AddressInfo, connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface ProxyServer {
  /** The proxy's URL, credentials included when it wants some. */
  url: string;
  port: number;
  /** The proxy's log so far: squid's access log, microsocks' stderr. */
  log(): string;
  /** Waits until the log contains `text` (squid logs a tunnel when it closes), at most `ms`. */
  waitForLog(text: string, ms?: number): Promise<string>;
  stop(): Promise<void>;
}

const running: ProxyServer[] = [];

/** Stops every proxy server the test file started. */
export async function stopProxies(): Promise<void> {
  await Promise.all(running.splice(0).map((proxy) => proxy.stop()));
}

/** A binary's path, or an error saying how to get it (CI installs both: ensure_squid, ensure_microsocks). */
function requireBinary(name: string, aptPackage: string): string {
  for (const dir of (process.env.PATH ?? '').split(':').concat(['/usr/sbin', '/usr/bin', '/sbin'])) {
    const path = join(dir, name);
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // not here
    }
  }
  throw new Error(`${name} is not installed, and the proxy tests run against a real one: apt-get install -y ${aptPackage} (scripts/services.sh ensure_${name} does it)`);
}

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}

async function waitForPort(port: number, child: ChildProcess, what: string, describe: () => string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${what} exited with ${child.exitCode} before listening: ${describe()}`);
    const up = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (up) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${what} did not listen on 127.0.0.1:${port} within ${ms} ms: ${describe()}`);
}

function track(child: ChildProcess, url: string, port: number, log: () => string, cleanup: () => void): ProxyServer {
  const proxy: ProxyServer = {
    url,
    port,
    log,
    async waitForLog(text, ms = 10_000) {
      const deadline = Date.now() + ms;
      for (;;) {
        const now = log();
        if (now.includes(text) || Date.now() > deadline) return now;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = once(child, 'exit');
        child.kill('SIGKILL');
        await exited;
      }
      cleanup();
    },
  };
  running.push(proxy);
  return proxy;
}

/**
 * A service name of this squid's own (its port is, while it runs; the test process's id keeps a
 * name clear of segments a killed test run left). squid names its shared-memory segments after
 * it (`/dev/shm/<name>-cf__queues.shm`), so two squids under the default name, started at once by
 * test files running in parallel, race to create the same segments and one dies ("File exists").
 */
const squidServiceName = (port: number): string => `trawltest${process.pid}p${port}`;

/** Removes the segments a SIGKILLed squid leaves behind. */
function removeSquidSegments(serviceName: string): void {
  try {
    for (const file of readdirSync('/dev/shm')) if (file.startsWith(`${serviceName}-`)) rmSync(join('/dev/shm', file), { force: true });
  } catch {
    // no /dev/shm: nothing was left there
  }
}

const credentials = (auth?: { user: string; password: string }): string =>
  auth === undefined ? '' : `${encodeURIComponent(auth.user)}:${encodeURIComponent(auth.password)}@`;

/**
 * squid on loopback: CONNECT to any port, no cache, access log in a temp dir; with `auth`, Basic
 * auth (407 without it); with `outgoingAddress` (a loopback address), it connects to targets from
 * that address, so a server can tell its requests from direct ones.
 */
export async function startSquid(options: { auth?: { user: string; password: string }; outgoingAddress?: string } = {}): Promise<ProxyServer> {
  const squid = requireBinary('squid', 'squid');
  const dir = mkdtempSync(join(tmpdir(), 'trawl-squid-'));
  // squid drops root for its own user, which must write the logs.
  chmodSync(dir, 0o777);
  const port = await freePort();
  const auth: string[] = [];
  if (options.auth !== undefined) {
    const helper = '/usr/lib/squid/basic_ncsa_auth';
    accessSync(helper, constants.X_OK);
    const hash = execFileSync('openssl', ['passwd', '-apr1', options.auth.password], { encoding: 'utf8' }).trim();
    writeFileSync(join(dir, 'passwd'), `${options.auth.user}:${hash}\n`, { mode: 0o644 });
    auth.push(
      `auth_param basic program ${helper} ${join(dir, 'passwd')}`,
      'auth_param basic children 1 startup=1 idle=1',
      'acl authed proxy_auth REQUIRED',
      'http_access deny !authed',
    );
  }
  const conf = [
    `http_port 127.0.0.1:${port}`,
    `pid_filename ${join(dir, 'squid.pid')}`,
    `cache_log ${join(dir, 'cache.log')}`,
    `access_log stdio:${join(dir, 'access.log')}`,
    `coredump_dir ${dir}`,
    'cache deny all',
    'cache_mem 8 MB',
    'shutdown_lifetime 0 seconds',
    'logfile_rotate 0',
    'netdb_filename none',
    'pinger_enable off',
    'dns_nameservers 127.0.0.1',
    ...(options.outgoingAddress === undefined ? [] : [`tcp_outgoing_address ${options.outgoingAddress}`]),
    ...auth,
    'acl loopback src 127.0.0.0/8',
    'http_access allow loopback',
    'http_access deny all',
  ].join('\n');
  writeFileSync(join(dir, 'squid.conf'), `${conf}\n`, { mode: 0o644 });
  const serviceName = squidServiceName(port);
  const child = spawn(squid, ['-N', '-n', serviceName, '-f', join(dir, 'squid.conf')], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const read = (file: string): string => {
    try {
      return readFileSync(join(dir, file), 'utf8');
    } catch {
      return '';
    }
  };
  const proxy = track(child, `http://${credentials(options.auth)}127.0.0.1:${port}`, port, () => read('access.log'), () => {
    rmSync(dir, { recursive: true, force: true });
    removeSquidSegments(serviceName);
  });
  await waitForPort(port, child, 'squid', () => `${output}\n${read('cache.log').slice(-2000)}`);
  return proxy;
}

/** microsocks (SOCKS5) on loopback; with `auth`, username/password authentication. Its log is its stderr. */
export async function startMicrosocks(options: { auth?: { user: string; password: string } } = {}): Promise<ProxyServer> {
  const microsocks = requireBinary('microsocks', 'microsocks');
  const port = await freePort();
  const args = ['-i', '127.0.0.1', '-p', String(port)];
  if (options.auth !== undefined) args.push('-u', options.auth.user, '-P', options.auth.password);
  const child = spawn(microsocks, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const proxy = track(child, `socks5://${credentials(options.auth)}127.0.0.1:${port}`, port, () => output, () => undefined);
  await waitForPort(port, child, 'microsocks', () => output);
  return proxy;
}

/** A loopback port nothing listens on: a dead proxy. */
export async function deadPort(): Promise<number> {
  return freePort();
}

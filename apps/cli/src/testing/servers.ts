import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Private servers for fault-injection tests: a redis-server and a PostgreSQL cluster of the test's
 * own, on free loopback ports, in temporary directories, that the test may restart, kill or wipe.
 * The machine's own servers (6379, 5432) are never touched: other tests use them at the same time.
 */

/** A free TCP port on 127.0.0.1 (bound and released: a race with another process is possible, not likely). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function until(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const exited = (child: ChildProcess): Promise<void> =>
  child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((resolve) => child.once('exit', () => resolve()));

/**
 * A redis-server with the durability docs/operations.md asks for: AOF on, `appendfsync everysec`,
 * no RDB snapshots, `noeviction`; its data in its own directory, so a restart reads the AOF back.
 */
export class PrivateRedis {
  private child: ChildProcess | null = null;
  private constructor(
    readonly port: number,
    readonly dir: string,
    private readonly appendOnly: boolean,
  ) {}

  /** The redis-server's pid while it runs. */
  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /**
   * `appendOnly` (default true): an append-only file, fsynced every second, so a restart keeps
   * the data (what the chaos cases need); false keeps nothing on disk, like this machine's own
   * Redis, for a benchmark that compares with runs on it.
   */
  static async start(options: { appendOnly?: boolean } = {}): Promise<PrivateRedis> {
    const redis = new PrivateRedis(await freePort(), mkdtempSync(join(tmpdir(), 'trawl-chaos-redis-')), options.appendOnly ?? true);
    await redis.launch();
    return redis;
  }

  private async launch(): Promise<void> {
    const persistence = this.appendOnly ? ['--appendonly', 'yes', '--appendfsync', 'everysec'] : ['--appendonly', 'no'];
    const child = spawn(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--dir', this.dir, ...persistence, '--save', '', '--maxmemory-policy', 'noeviction', '--logfile', join(this.dir, 'redis.log')],
      { stdio: 'ignore' },
    );
    this.child = child;
    await until(() => this.ping(), 10_000, `redis-server on port ${this.port}`);
  }

  /** PING with redis-cli (no client library here: the test's own connections are the crawler's). */
  ping(): boolean {
    try {
      return execFileSync('redis-cli', ['-p', String(this.port), 'PING'], { encoding: 'utf8', timeout: 2000, stdio: ['ignore', 'pipe', 'ignore'] }).trim() === 'PONG';
    } catch {
      return false;
    }
  }

  cli(...args: string[]): string {
    return execFileSync('redis-cli', ['-p', String(this.port), ...args], { encoding: 'utf8', timeout: 10_000 }).trim();
  }

  /** A clean restart (SIGTERM: Redis fsyncs its AOF and exits), as `systemctl restart` does; down for `downMs`. */
  async restart(downMs = 0): Promise<void> {
    const child = this.child;
    if (child) {
      child.kill('SIGTERM');
      await exited(child);
    }
    if (downMs > 0) await new Promise((r) => setTimeout(r, downMs));
    await this.launch();
  }

  async stop(): Promise<void> {
    const child = this.child;
    this.child = null;
    if (child) {
      child.kill('SIGKILL');
      await exited(child);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The newest installed PostgreSQL's binaries (Debian's /usr/lib/postgresql/<v>/bin), else PATH. */
function postgresBin(name: string): string {
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((v) => existsSync(join(root, v, 'bin', name)))
      .sort((a, b) => Number(b) - Number(a));
    if (versions[0]) return join(root, versions[0], 'bin', name);
  }
  return name;
}

/**
 * A PostgreSQL cluster of the test's own: `initdb` into a temporary directory and `postgres` on a
 * free port, trust auth for user `postgres` on loopback only.
 *
 * PostgreSQL refuses to run as root, and CI runs as root: then the cluster belongs to the
 * `postgres` system user (the one the distribution's package creates) and both programs run as
 * that user through `runuser`; its directory is created for it. Run as any other user, they run as
 * that user. The server is a child of this process (through runuser), stopped with its data when
 * the test ends.
 */
export class PrivatePostgres {
  private child: ChildProcess | null = null;
  private readonly asRoot = process.getuid?.() === 0;
  private constructor(
    readonly port: number,
    readonly dir: string,
    private readonly settings: Record<string, string>,
  ) {}

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  /**
   * `settings`: more server settings (`-c name=value`), e.g. `shared_preload_libraries` for a
   * benchmark that reads `pg_stat_statements`.
   */
  static async start(options: { settings?: Record<string, string> } = {}): Promise<PrivatePostgres> {
    const base = mkdtempSync(join(tmpdir(), 'trawl-chaos-pg-'));
    const pg = new PrivatePostgres(await freePort(), join(base, 'data'), options.settings ?? {});
    if (pg.asRoot) {
      const { uid, gid } = systemUser('postgres');
      chownSync(base, uid, gid);
      chmodSync(base, 0o700);
    }
    pg.run(postgresBin('initdb'), ['-D', pg.dir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
    await pg.launch();
    return pg;
  }

  /** Runs a PostgreSQL program to completion (as `postgres` when this process is root). */
  private run(program: string, args: string[]): void {
    const [cmd, argv] = this.asRoot ? ['runuser', ['-u', 'postgres', '--', program, ...args]] : [program, args];
    execFileSync(cmd, argv, { stdio: 'ignore', timeout: 60_000 });
  }

  private async launch(): Promise<void> {
    const program = postgresBin('postgres');
    const args = ['-D', this.dir, '-p', String(this.port), '-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${join(this.dir, '..')}`, '-c', 'max_connections=200', '-c', 'shared_buffers=32MB'];
    for (const [name, value] of Object.entries(this.settings)) args.push('-c', `${name}=${value}`);
    const [cmd, argv] = this.asRoot ? ['runuser', ['-u', 'postgres', '--', program, ...args]] : [program, args];
    this.child = spawn(cmd, argv, { stdio: 'ignore' });
    await until(() => this.ready(), 30_000, `PostgreSQL on port ${this.port}`);
  }

  ready(): boolean {
    try {
      execFileSync(postgresBin('pg_isready'), ['-q', '-h', '127.0.0.1', '-p', String(this.port)], { timeout: 2000 });
      return true;
    } catch {
      return false;
    }
  }

  /** The postmaster's pid, from its pid file (through runuser it is not our direct child). */
  postmasterPid(): number | null {
    try {
      return Number(readFileSync(join(this.dir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    } catch {
      return null;
    }
  }

  /**
   * A restart: fast shutdown (SIGINT: clients are disconnected, in-flight transactions rolled back,
   * a checkpoint written), down for `downMs`, then started again — what `pg_ctl restart -m fast`
   * and `systemctl restart` do.
   */
  async restart(downMs = 0): Promise<void> {
    await this.shutdown('SIGINT');
    if (downMs > 0) await new Promise((r) => setTimeout(r, downMs));
    await this.launch();
  }

  private async shutdown(signal: NodeJS.Signals): Promise<void> {
    const pid = this.postmasterPid();
    const child = this.child;
    this.child = null;
    if (pid) {
      try {
        process.kill(pid, signal);
      } catch {
        // already gone
      }
    }
    if (child) await exited(child);
    await until(() => this.postmasterPid() === null || !alive(this.postmasterPid() as number), 30_000, 'PostgreSQL to stop');
  }

  async stop(): Promise<void> {
    await this.shutdown('SIGQUIT').catch(() => undefined);
    rmSync(join(this.dir, '..'), { recursive: true, force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function systemUser(name: string): { uid: number; gid: number } {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${name}:`));
  if (!line) throw new Error(`a private PostgreSQL run as root needs the "${name}" system user (installed with the postgresql package)`);
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

/**
 * A small tmpfs mounted on `dir` (root only): a content directory whose disk fills up. `grow`
 * remounts it larger — the operator's fix.
 */
export class SmallDisk {
  private constructor(readonly dir: string) {}

  static mount(dir: string, sizeBytes: number): SmallDisk {
    if (process.getuid?.() !== 0) throw new Error('the disk-full test mounts a small tmpfs and needs root (CI runs as root)');
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeBytes}`, 'tmpfs', dir]);
    return new SmallDisk(dir);
  }

  grow(sizeBytes: number): void {
    execFileSync('mount', ['-o', `remount,size=${sizeBytes}`, this.dir]);
  }

  unmount(): void {
    execFileSync('umount', [this.dir]);
  }
}

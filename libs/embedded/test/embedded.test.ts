import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRedis } from '@trawl/redis';
import { afterAll, describe, expect, it } from 'vitest';
import { lockDataDir } from '../src/lock.js';
import { processRuns } from '../src/proc.js';
import { startEmbeddedPostgres } from '../src/postgres.js';
import { startEmbeddedRedis } from '../src/redis.js';

const root = mkdtempSync(join(tmpdir(), 'trawl-embedded-lib-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
  rmSync(root, { recursive: true, force: true });
});
let n = 0;
const freshDir = () => join(root, `d${(n += 1)}`);

const alive = processRuns;

/** A pid that certainly belongs to no running process (a child that has exited and been reaped). */
const deadPid = (): number => spawnSync('true').pid as number;

/** A process that runs until the test ends. */
function sleeper(): number {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  children.push(child);
  return child.pid as number;
}

describe('a data directory is used by one run at a time', () => {
  it('a second lock on the directory is refused, naming the holder and the lock file', () => {
    const dir = freshDir();
    const lock = lockDataDir(dir, 'the embedded Redis');
    expect(JSON.parse(readFileSync(`${dir}.lock`, 'utf8')).pids).toEqual([process.pid]);
    expect(() => lockDataDir(dir, 'the embedded Redis')).toThrow(
      expect.objectContaining({ code: 'ERR_EMBEDDED_START', message: expect.stringContaining(`is in use by trawl process ${process.pid}`) }),
    );
    expect(() => lockDataDir(dir, 'the embedded Redis')).toThrow(`(Lock file: ${dir}.lock)`);
    lock.release();
    lockDataDir(dir, 'the embedded Redis').release();
  });

  it('a lock held by another running process is refused; one whose processes are gone is taken over', () => {
    const dir = freshDir();
    writeFileSync(`${dir}.lock`, JSON.stringify({ pids: [deadPid(), sleeper()], host: 'h', since: 'then', token: 'x' }));
    expect(() => lockDataDir(dir, 'the embedded Redis')).toThrow(/is in use by trawl process/);

    writeFileSync(`${dir}.lock`, JSON.stringify({ pids: [deadPid(), deadPid()], host: 'h', since: 'then', token: 'x' }));
    const lock = lockDataDir(dir, 'the embedded Redis');
    expect(JSON.parse(readFileSync(`${dir}.lock`, 'utf8')).pids).toEqual([process.pid]);
    lock.release();

    writeFileSync(`${dir}.lock`, 'garbage');
    lockDataDir(dir, 'the embedded Redis').release();
  });

  it('release gives up only its own lock', () => {
    const dir = freshDir();
    const lock = lockDataDir(dir, 'x');
    writeFileSync(`${dir}.lock`, JSON.stringify({ pids: [sleeper()], host: 'h', since: 'then', token: 'someone-else' }));
    lock.release();
    expect(() => lockDataDir(dir, 'x')).toThrow(/in use/);
  });

  it('two embedded Redis servers never run on one directory; after stop the directory is free again', async () => {
    const dir = freshDir();
    const first = await startEmbeddedRedis({ dir });
    try {
      await expect(startEmbeddedRedis({ dir })).rejects.toMatchObject({ code: 'ERR_EMBEDDED_START', message: expect.stringContaining('is in use by trawl process') });
      expect(JSON.parse(readFileSync(`${dir}.lock`, 'utf8')).pids).toEqual([process.pid, first.childPid]);
    } finally {
      await first.stop();
    }
    const again = await startEmbeddedRedis({ dir });
    await again.stop();
  });

  it('two embedded PostgreSQL (PGlite) never open one directory', async () => {
    const dir = freshDir();
    const first = await startEmbeddedPostgres({ dir });
    try {
      await expect(startEmbeddedPostgres({ dir })).rejects.toMatchObject({ code: 'ERR_EMBEDDED_START', message: expect.stringContaining('embedded PostgreSQL data directory') });
    } finally {
      await first.stop();
    }
  }, 60_000);
});

describe('the embedded redis-server dies with its parent, even on SIGKILL', () => {
  const fixture = fileURLToPath(new URL('./hold-redis.ts', import.meta.url));
  const repo = fileURLToPath(new URL('../../..', import.meta.url));

  async function startParent(dir: string, method: string): Promise<{ parent: ChildProcess; pid: number; url: string }> {
    const parent = spawn(process.execPath, ['--conditions=trawl-source', '--import', 'tsx', fixture, dir, method], { cwd: repo, stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(parent);
    const line = await new Promise<string>((resolve, reject) => {
      let out = '';
      parent.stdout?.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('\n')) resolve(out.split('\n')[0] as string);
      });
      parent.once('exit', (code) => reject(new Error(`parent exited (${code}) before starting redis`)));
      setTimeout(() => reject(new Error('parent did not start redis in 20 s')), 20_000);
    });
    return { parent, ...(JSON.parse(line) as { pid: number; url: string }) };
  }

  it.each(['setpriv', 'watchdog'])('%s: SIGKILL the parent, the server has exited within 2 s and its writes survive', async (method) => {
    const dir = freshDir();
    const { parent, pid, url } = await startParent(dir, method);
    const redis = createRedis(url, { name: 'trawl-embedded-test' });
    redis.on('error', () => undefined);
    await redis.set('survives', method);
    redis.disconnect();
    expect(alive(pid)).toBe(true);

    parent.kill('SIGKILL');
    const killedAt = Date.now();
    while (alive(pid) && Date.now() - killedAt < 2000) await new Promise((r) => setTimeout(r, 20));
    const survived = alive(pid);
    if (survived) process.kill(pid, 'SIGKILL'); // leave no orphan behind when this fails
    expect(survived).toBe(false);

    // The next run takes the directory over (the lock's processes are gone) and resumes its data.
    const next = await startEmbeddedRedis({ dir });
    const again = createRedis(next.url, { name: 'trawl-embedded-test' });
    try {
      expect(await again.get('survives')).toBe(method);
    } finally {
      again.disconnect();
      await next.stop();
    }
  }, 60_000);
});

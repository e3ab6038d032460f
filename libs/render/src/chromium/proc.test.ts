import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { findPidByArgument, processTree, processTreeCpuMs, processTreeMemoryBytes } from './proc.js';

// A child of this process with a marker on its command line stands in for a browser.
const marker = `--trawl-proc-test=${randomUUID()}`;
const child: ChildProcess = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)', '--', marker], { stdio: 'ignore' });

afterAll(() => {
  child.kill('SIGTERM');
});

describe('/proc readings', () => {
  it('finds a process by its marker and sees it under its parent', async () => {
    let pid: number | null = null;
    for (let i = 0; i < 50 && pid === null; i++) {
      pid = await findPidByArgument(marker);
      if (pid === null) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(pid).toBe(child.pid);
    expect(await processTree(process.pid)).toContain(child.pid);
  });

  it('reads the memory (PSS here) and CPU of a tree', async () => {
    const memory = await processTreeMemoryBytes(process.pid);
    expect(memory?.measure).toBe('pss');
    expect(memory?.bytes).toBeGreaterThan(10 * 1024 * 1024);
    expect(await processTreeCpuMs(process.pid)).toBeGreaterThan(0);
    expect(await findPidByArgument(`--trawl-proc-test=${randomUUID()}`)).toBeNull();
  });
});

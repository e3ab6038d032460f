import { readdir, readFile } from 'node:fs/promises';

/**
 * A browser's memory and CPU as the kernel sees them: its process and every process under it
 * (zygotes, renderers, GPU, network and storage services), from /proc. Playwright does not expose
 * the pid of a browser it launched, so the browser is found by a marker switch on its command
 * line. Null where /proc cannot be read (not Linux, a restricted container).
 */
export async function findPidByArgument(marker: string): Promise<number | null> {
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return null;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'latin1').catch(() => '');
    // The first process with the marker is the browser: its children inherit no such switch
    // (zygotes and renderers get their own command lines), but a wrapper script would hold it too.
    if (cmdline.split('\0').includes(marker) && !/^(?:\/bin\/|\/usr\/bin\/)?(?:ba|da)?sh\0/.test(cmdline)) return Number(entry);
  }
  return null;
}

/** The pids of a process and every process under it (one /proc walk). Null where /proc cannot be read. */
export async function processTree(rootPid: number): Promise<number[] | null> {
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return null;
  }
  const children = new Map<number, number[]>();
  await Promise.all(
    entries
      .filter((entry) => /^\d+$/.test(entry))
      .map(async (entry) => {
        const stat = await readFile(`/proc/${entry}/stat`, 'latin1').catch(() => null);
        if (stat === null) return;
        const ppid = Number(statFields(stat)[1]);
        const list = children.get(ppid) ?? [];
        list.push(Number(entry));
        children.set(ppid, list);
      }),
  );
  const tree = [rootPid];
  for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i] as number) ?? []));
  return tree;
}

/**
 * Memory of a process tree: the proportional set size (shared pages split between the processes
 * sharing them, /proc/<pid>/smaps_rollup) where readable, else the resident set (VmRSS), which
 * counts a page shared by a browser's dozen processes a dozen times (about twice the PSS for an
 * idle Chromium here).
 */
export async function processTreeMemoryBytes(rootPid: number): Promise<{ bytes: number; measure: 'pss' | 'rss' } | null> {
  const tree = await processTree(rootPid);
  if (tree === null) return null;
  const pss = await sumKib(tree, 'smaps_rollup', /^Pss:\s+(\d+) kB/m);
  if (pss !== null) return { bytes: pss, measure: 'pss' };
  const rss = await sumKib(tree, 'status', /^VmRSS:\s+(\d+) kB/m);
  return rss === null ? null : { bytes: rss, measure: 'rss' };
}

async function sumKib(pids: number[], file: string, field: RegExp): Promise<number | null> {
  let total = 0;
  let read = false;
  for (const pid of pids) {
    const text = await readFile(`/proc/${pid}/${file}`, 'latin1').catch(() => null);
    const kib = text === null ? undefined : field.exec(text)?.[1];
    if (kib === undefined) continue;
    total += Number(kib) * 1024;
    read = true;
  }
  return read ? total : null;
}

/**
 * CPU time (user + system, milliseconds) of a process tree so far, exited descendants included:
 * each live process's own time plus what it collected from the children it reaped. Assumes the
 * usual 100 clock ticks per second (10 ms resolution).
 */
export async function processTreeCpuMs(rootPid: number): Promise<number | null> {
  const tree = await processTree(rootPid);
  if (tree === null) return null;
  let ticks = 0;
  for (const pid of tree) {
    const stat = await readFile(`/proc/${pid}/stat`, 'latin1').catch(() => null);
    if (stat === null) continue;
    // After "pid (comm) ": state is field 0, utime 11, stime 12, cutime 13, cstime 14.
    const fields = statFields(stat);
    for (const at of [11, 12, 13, 14]) ticks += Number(fields[at] ?? 0);
  }
  return ticks * 10;
}

/** The fields of /proc/<pid>/stat after "pid (comm) ": comm may hold spaces and parentheses. */
function statFields(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

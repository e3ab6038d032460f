import { createRequire } from 'node:module';
import { getPriority, setPriority } from 'node:os';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';

/**
 * Starts the thread's module. From a compiled package it is plain JavaScript; from the sources
 * (TypeScript) the thread registers tsx and the `trawl-source` export condition first, as the
 * `trawl` command does for the main thread. The thread says `{ ready: true }` once the module has
 * loaded, or `{ failed }` with the error.
 */
const BOOTSTRAP = `
const { parentPort, workerData } = require('node:worker_threads');
${lowerPriorityCode('workerData.nice')}
${nameThreadCode('workerData.name')}
(async () => {
  if (workerData.tsx) {
    (await import(workerData.tsx)).register();
    require('node:module').register('data:text/javascript,' + encodeURIComponent(
      'export async function resolve(s, c, n) { return n(s, { ...c, conditions: [...new Set(["trawl-source", ...c.conditions])] }); }',
    ));
  }
  await import(workerData.entry);
  parentPort.postMessage({ ready: true });
})().catch((error) => {
  parentPort.postMessage({ failed: String((error && error.stack) || error) });
});
`;

/**
 * Source of a statement that lowers the calling thread's OS priority to the nice value the
 * expression `niceExpression` gives (0 or less: nothing). Threads' own code is eval'd CommonJS,
 * so they share this text rather than an import.
 */
export function lowerPriorityCode(niceExpression: string): string {
  return `if (${niceExpression} > 0 && process.platform === 'linux') { try { const os = require('node:os'); if (os.getPriority() < ${niceExpression}) os.setPriority(${niceExpression}); } catch {} }`;
}

/**
 * Source of a statement that gives the calling thread the OS name the expression `nameExpression`
 * gives (null: none), as `top -H`, `ps -L` and `/proc/<pid>/task/<tid>/comm` show it, so an
 * operator (and the cost benchmark) can tell trawl's threads from each other and from V8's and
 * libuv's, which all share the process's name. Linux keeps 15 bytes of it; elsewhere, or where
 * /proc refuses the write, the thread keeps its name.
 */
export function nameThreadCode(nameExpression: string): string {
  return `if (${nameExpression} && process.platform === 'linux') { try { require('node:fs').writeFileSync('/proc/thread-self/comm', String(${nameExpression}).slice(0, 15)); } catch {} }`;
}

/**
 * Lowers this thread's OS priority to `nice` (0–19; 0 or less: nothing). On Linux each thread has
 * its own nice value (`setpriority` on pid 0 sets the calling thread's), so the threads that do
 * background work — processing pages, analysing them, compressing bodies — yield the cores to
 * the event loop that starts polite fetches when the cores are short, and threads this one starts
 * inherit the value. Elsewhere the call would lower the whole process, so it does nothing. A
 * thread never raises its own priority (that needs privileges), and a refusal is ignored: the
 * crawl runs the same, only without the preference.
 */
export function lowerThreadPriority(nice: number): void {
  if (nice <= 0 || process.platform !== 'linux') return;
  try {
    if (getPriority() < nice) setPriority(nice);
  } catch {
    // A sandbox that forbids it: the threads keep the process's priority.
  }
}

/** tsx's ESM API module (its `register()` installs the loader in the thread that calls it). */
function tsxApi(): string {
  // The package maps `tsx/esm/api` to index.mjs for import and index.cjs for require; only the
  // ESM one registers from a thread.
  return pathToFileURL(createRequire(import.meta.url).resolve('tsx/esm/api').replace(/\.cjs$/, '.mjs')).href;
}

/**
 * A thread running the module at `entry` (a file URL; `.ts` from the sources, `.js` compiled),
 * which reads `data` as `workerData.data`. The caller listens for `{ ready }` / `{ failed }`.
 * `nice` lowers the thread's OS priority before its module loads (see `lowerThreadPriority`);
 * `name` is its OS name (see `nameThreadCode`).
 */
export function startModuleThread(entry: URL, data: unknown = null, options: { nice?: number; name?: string } = {}): Worker {
  const fromSources = entry.pathname.endsWith('.ts');
  return new Worker(BOOTSTRAP, {
    eval: true,
    workerData: { entry: entry.href, tsx: fromSources ? tsxApi() : null, data, nice: options.nice ?? 0, name: options.name ?? null },
    execArgv: profilingArgs(),
  });
}

/** The process's `--cpu-prof` flags, so a profiled process profiles its threads too (each writes a file of its own). */
export function profilingArgs(): string[] {
  return process.execArgv.filter((arg) => arg.startsWith('--cpu-prof'));
}

/**
 * The URL of a sibling module of `from` (an `import.meta.url`): `name.ts` when `from` is a
 * source file, `name.js` when it is compiled.
 */
export function siblingModule(from: string, name: string): URL {
  return new URL(`./${name}${from.endsWith('.ts') ? '.ts' : '.js'}`, from);
}

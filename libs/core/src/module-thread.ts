import { createRequire } from 'node:module';
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

/** tsx's ESM API module (its `register()` installs the loader in the thread that calls it). */
function tsxApi(): string {
  // The package maps `tsx/esm/api` to index.mjs for import and index.cjs for require; only the
  // ESM one registers from a thread.
  return pathToFileURL(createRequire(import.meta.url).resolve('tsx/esm/api').replace(/\.cjs$/, '.mjs')).href;
}

/**
 * A thread running the module at `entry` (a file URL; `.ts` from the sources, `.js` compiled),
 * which reads `data` as `workerData.data`. The caller listens for `{ ready }` / `{ failed }`.
 */
export function startModuleThread(entry: URL, data: unknown = null): Worker {
  const fromSources = entry.pathname.endsWith('.ts');
  return new Worker(BOOTSTRAP, { eval: true, workerData: { entry: entry.href, tsx: fromSources ? tsxApi() : null, data }, execArgv: profilingArgs() });
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

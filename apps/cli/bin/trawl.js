#!/usr/bin/env node
// The `trawl` command. In a source checkout it runs the TypeScript sources through tsx (no build
// step); a built install (npm run build) runs dist/main.js.
import { existsSync } from 'node:fs';
import { register } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const source = join(root, 'src', 'main.ts');
if (existsSync(source) && !process.env.TRAWL_USE_DIST) {
  const { register: registerTsx } = await import('tsx/esm/api');
  registerTsx();
  // Resolve @trawl/* packages to their sources (the trawl-source export condition).
  register('data:text/javascript,' + encodeURIComponent(
    'export async function resolve(s, c, n) { return n(s, { ...c, conditions: [...new Set(["trawl-source", ...c.conditions])] }); }',
  ));
  await import(pathToFileURL(source).href);
} else {
  await import(pathToFileURL(join(root, 'dist', 'main.js')).href);
}

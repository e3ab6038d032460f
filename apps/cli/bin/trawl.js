#!/usr/bin/env node
// The `trawl` command. It runs one of two builds of the same program:
//   dist    the compiled JavaScript (npm run build): what an installed package or an image runs;
//   source  the TypeScript sources through tsx, with no build step: for a source checkout.
// Which one:
//   1. TRAWL_RUNTIME=dist or TRAWL_RUNTIME=source, when set (TRAWL_USE_DIST=1 means dist);
//   2. else dist when NODE_ENV=production;
//   3. else source when this is a checkout (src/main.ts exists) and tsx is installed (a
//      development install: tsx is a dev dependency, so `npm ci --omit=dev` leaves it out);
//   4. else dist.
// Sources are never compared with dist by age: a stale dist is not silently preferred, and a
// production run never depends on tsx.
import { existsSync } from 'node:fs';
import { register } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const source = join(root, 'src', 'main.ts');
const compiled = join(root, 'dist', 'main.js');

function hasTsx() {
  try {
    import.meta.resolve('tsx/esm/api');
    return true;
  } catch {
    return false;
  }
}

function choose(env) {
  const asked = env.TRAWL_RUNTIME?.trim().toLowerCase();
  if (asked === 'dist' || asked === 'source') return asked;
  if (asked) {
    process.stderr.write(`trawl: TRAWL_RUNTIME must be dist or source, got ${JSON.stringify(env.TRAWL_RUNTIME)}\n`);
    process.exit(2);
  }
  if (env.TRAWL_USE_DIST) return 'dist';
  if (env.NODE_ENV === 'production') return 'dist';
  return existsSync(source) && hasTsx() ? 'source' : 'dist';
}

if (choose(process.env) === 'source') {
  if (!hasTsx()) {
    process.stderr.write('trawl: TRAWL_RUNTIME=source needs tsx (a dev dependency): run npm ci without --omit=dev\n');
    process.exit(2);
  }
  const { register: registerTsx } = await import('tsx/esm/api');
  registerTsx();
  // Resolve @trawl/* packages to their sources (the trawl-source export condition).
  register('data:text/javascript,' + encodeURIComponent(
    'export async function resolve(s, c, n) { return n(s, { ...c, conditions: [...new Set(["trawl-source", ...c.conditions])] }); }',
  ));
  await import(pathToFileURL(source).href);
} else {
  if (!existsSync(compiled)) {
    process.stderr.write(`trawl: ${compiled} is missing: run npm run build (or use the sources: TRAWL_RUNTIME=source with tsx installed)\n`);
    process.exit(2);
  }
  await import(pathToFileURL(compiled).href);
}

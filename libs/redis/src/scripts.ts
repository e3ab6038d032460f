import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RedisClient } from './connection.js';

/**
 * Lua scripts are the unit of atomic state change. Each lives in a file named
 * `verbNoun-<numKeys>.lua` beside the lib that owns it and opens with a header listing KEYS,
 * ARGV, the return value and the error codes. `--- @include "name"` pulls in a shared fragment
 * from `includes/name.lua`. Scripts are registered with ioredis' defineCommand under
 * `<name>_<version>`: EVALSHA keys the body by its hash, and the versioned command name keeps two
 * releases that share one Redis from ever calling each other's scripts by the same name.
 */
export interface ScriptDefinition {
  /** File stem without the key count, e.g. "claimReady". */
  name: string;
  numberOfKeys: number;
  lua: string;
}

const INCLUDE = /^---\s*@include\s+"([\w-]+)"\s*$/gm;

/** Reads `<dir>/<name>-<n>.lua`, resolving includes from `<dir>/includes/`. */
export function loadScript(dir: string, fileStem: string): ScriptDefinition {
  const match = /^(\w+)-(\d+)$/.exec(fileStem);
  if (!match) throw new Error(`Lua script file name must be verbNoun-<numKeys>: ${fileStem}`);
  const seen = new Set<string>();
  const expand = (source: string): string =>
    source.replace(INCLUDE, (_line, include: string) => {
      if (seen.has(include)) return `-- (${include} already included)`;
      seen.add(include);
      return expand(readFileSync(join(dir, 'includes', `${include}.lua`), 'utf8'));
    });
  const lua = expand(readFileSync(join(dir, `${fileStem}.lua`), 'utf8'));
  return { name: match[1] as string, numberOfKeys: Number(match[2]), lua };
}

/** Loads several scripts from one directory. `moduleUrl` is `import.meta.url` of the caller. */
export function loadScripts(moduleUrl: string, relativeDir: string, fileStems: readonly string[]): ScriptDefinition[] {
  const dir = join(dirname(fileURLToPath(moduleUrl)), relativeDir);
  return fileStems.map((stem) => loadScript(dir, stem));
}

export type ScriptCaller = (keys: readonly (string | number)[], args: readonly (string | number | Buffer)[]) => Promise<unknown>;

/**
 * Defines the scripts on a connection (idempotent per connection) and returns typed callers.
 * ioredis sends EVALSHA and falls back to EVAL once if the server lost its script cache.
 */
export function bindScripts<N extends string>(
  redis: RedisClient,
  version: string,
  scripts: readonly ScriptDefinition[],
): Record<N, ScriptCaller> {
  const callers = {} as Record<string, ScriptCaller>;
  for (const script of scripts) {
    const command = `${script.name}_${version.replace(/\W/g, '_')}`;
    const target = redis as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    if (typeof target[command] !== 'function') {
      redis.defineCommand(command, { numberOfKeys: script.numberOfKeys, lua: script.lua });
    }
    callers[script.name] = (keys, args) => {
      if (keys.length !== script.numberOfKeys) {
        throw new Error(`${script.name} takes ${script.numberOfKeys} keys, got ${keys.length}`);
      }
      return (target[command] as (...a: unknown[]) => Promise<unknown>).call(redis, ...keys, ...args);
    };
  }
  return callers as Record<N, ScriptCaller>;
}

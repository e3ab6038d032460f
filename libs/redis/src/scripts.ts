import { hash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RedisClient } from './connection.js';

/**
 * Lua scripts are the unit of atomic state change. Each lives in a file named
 * `verbNoun-<numKeys>.lua` beside the lib that owns it and opens with a header listing KEYS,
 * ARGV, the return value and the error codes. `--- @include "name"` pulls in a shared fragment
 * from `includes/name.lua`. A script is called by EVALSHA of its body, so two releases that
 * share one Redis never run each other's version of a script.
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

type Eval = (scriptOrSha: string, numberOfKeys: number, ...keysAndArgs: (string | number | Buffer)[]) => Promise<unknown>;

/**
 * Typed callers of the scripts on a connection. Each call is an EVALSHA, and an EVAL (which also
 * caches the script) when the server answers NOSCRIPT: after a restart, a SCRIPT FLUSH, or on a
 * cluster node that has not run it yet.
 *
 * The scripts are deliberately not ioredis commands (`defineCommand`): ioredis copies every
 * defined command onto each pipeline it builds, one per tick on an auto-pipelined connection,
 * which with trawl's ~30 scripts made each pipeline cost ~4× more CPU to build.
 */
export function bindScripts<N extends string>(redis: RedisClient, scripts: readonly ScriptDefinition[]): Record<N, ScriptCaller> {
  const callers = {} as Record<string, ScriptCaller>;
  const evalsha = redis.evalsha.bind(redis) as Eval;
  const evalScript = redis.eval.bind(redis) as Eval;
  for (const script of scripts) {
    const sha = hash('sha1', script.lua);
    callers[script.name] = (keys, args) => {
      if (keys.length !== script.numberOfKeys) {
        throw new Error(`${script.name} takes ${script.numberOfKeys} keys, got ${keys.length}`);
      }
      return evalsha(sha, script.numberOfKeys, ...keys, ...args).catch((error: unknown) => {
        if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
        return evalScript(script.lua, script.numberOfKeys, ...keys, ...args);
      });
    };
  }
  return callers as Record<N, ScriptCaller>;
}

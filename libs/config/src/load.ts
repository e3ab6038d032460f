import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { type Config, configSchema, type SettingMeta, settingsRegistry } from './schema.js';

export interface SettingInfo extends SettingMeta {
  /** Dotted path in the config object, e.g. "worker.concurrency". */
  path: string;
  /** The default as text, or '' when unset by default. */
  defaultText: string;
}

/** `{ a: 1, b: 2 }` → "a=1,b=2" (how a setting of named values is written in the environment). */
const namedValues = (value: object): string =>
  Object.entries(value)
    .map(([name, v]) => `${name}=${String(v)}`)
    .join(',');

/** Every setting in declaration order (for the README table, `trawl config`, and error messages). */
export function listSettings(): SettingInfo[] {
  const out: SettingInfo[] = [];
  const walk = (schema: z.ZodObject, prefix: string[]): void => {
    for (const [key, child] of Object.entries(schema.shape) as [string, z.ZodType][]) {
      const path = [...prefix, key];
      const meta = settingsRegistry.get(child);
      if (meta) {
        const parsed = child.safeParse(undefined);
        const value = parsed.success ? parsed.data : undefined;
        const defaultText = value === undefined ? '' : Array.isArray(value) ? value.join(',') : typeof value === 'object' && value !== null ? namedValues(value) : String(value);
        out.push({ ...meta, path: path.join('.'), defaultText });
      } else if (child instanceof z.ZodObject) {
        walk(child, path);
      }
    }
  };
  walk(configSchema, []);
  return out;
}

/** Invalid configuration: names every bad field with its environment variable. */
export class ConfigError extends Error {
  readonly code = 'ERR_CONFIG_INVALID';
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

export interface LoadConfigOptions {
  /** The environment (process.env in main.ts). */
  env?: Record<string, string | undefined>;
  /** Overrides from CLI flags, shaped like the config (strings are converted like env values). */
  overrides?: DeepPartial<Record<string, unknown>>;
  /** A JSON file shaped like the config; TRAWL_CONFIG_FILE in env names one too. */
  file?: string;
}
type DeepPartial<T> = { [K in keyof T]?: unknown };

function setPath(target: Record<string, unknown>, path: string[], value: unknown): void {
  let node = target;
  for (const key of path.slice(0, -1)) {
    const next = node[key];
    if (typeof next !== 'object' || next === null || Array.isArray(next)) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[path[path.length - 1] as string] = value;
}

function merge(target: Record<string, unknown>, source: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(source)) {
    if (value === undefined) continue;
    const existing = target[key];
    if (value && typeof value === 'object' && !Array.isArray(value) && existing && typeof existing === 'object' && !Array.isArray(existing)) {
      merge(existing as Record<string, unknown>, value as Record<string, unknown>);
    } else {
      target[key] = value;
    }
  }
}

/**
 * Resolves the configuration once: defaults < config file < environment < overrides (flags).
 * Throws ConfigError naming every invalid field; the result is deeply frozen.
 */
export function loadConfig(options: LoadConfigOptions = {}): Readonly<Config> {
  const env = options.env ?? {};
  const settings = listSettings();
  const raw: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(configSchema.shape)) if (child instanceof z.ZodObject) raw[key] = {};
  const problems: string[] = [];

  const file = options.file ?? env.TRAWL_CONFIG_FILE;
  if (file) {
    try {
      merge(raw, JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>);
    } catch (error) {
      problems.push(`TRAWL_CONFIG_FILE (${file}): ${(error as Error).message}`);
    }
  }
  for (const setting of settings) {
    const value = env[setting.env];
    if (value !== undefined && value.trim() !== '') setPath(raw, setting.path.split('.'), value);
  }
  if (options.overrides) merge(raw, options.overrides as Record<string, unknown>);

  const result = configSchema.safeParse(raw);
  if (!result.success) {
    const byPath = new Map(settings.map((s) => [s.path, s]));
    for (const issue of result.error.issues) {
      const path = issue.path.filter((p) => typeof p === 'string' || typeof p === 'number').join('.');
      const setting = byPath.get(path) ?? byPath.get(path.replace(/\.\d+$/, ''));
      // A secret's value is never repeated back, not even when it is wrong; nor is a password in a URL.
      const raw = setting && !setting.secret ? env[setting.env] : undefined;
      const given = raw === undefined ? undefined : redactUrlPasswords(raw);
      const where = setting ? `${setting.env} (${setting.path})` : path || 'config';
      problems.push(`${where}: ${issue.message}${given !== undefined ? ` — got ${JSON.stringify(given)}` : ''}`);
    }
  }
  if (result.success) problems.push(...placeholderProblems(result.data as Config, env));
  if (problems.length > 0) throw new ConfigError(problems);
  return deepFreeze(result.data as Config);
}

/**
 * The placeholder secrets of .env.example and the Kubernetes example Secret all contain this:
 * they are public, so a fleet started with one would run with credentials anyone can read.
 */
export const PLACEHOLDER_MARK = 'change-me';
const isPlaceholder = (value: string | undefined): boolean => value !== undefined && value.toLowerCase().includes(PLACEHOLDER_MARK);
const urlPassword = (value: string): string => {
  const match = /\/\/[^/@\s:]*:([^@\s/]*)@/.exec(value);
  return match ? decodeURIComponent(match[1] as string) : '';
};

/** Every secret still holding a placeholder, named by its setting (never repeating a value). */
function placeholderProblems(config: Config, env: Record<string, string | undefined>): string[] {
  const fix = 'it holds a placeholder of .env.example, which anyone can read: run `sh scripts/setup-secrets.sh` (or set a random value)';
  const found: string[] = [];
  for (const setting of listSettings()) {
    if (!setting.secret) continue;
    let value: unknown = config;
    for (const key of setting.path.split('.')) value = (value as Record<string, unknown> | undefined)?.[key];
    // Structured secrets (proxy entries) are judged by their text.
    const values = (Array.isArray(value) ? (value as unknown[]) : value === undefined ? [] : [value]).map((v) => (typeof v === 'string' ? v : JSON.stringify(v)));
    if (values.some(isPlaceholder)) found.push(`${setting.env} (${setting.path}): ${fix}`);
  }
  if (config.redisUrl !== undefined && isPlaceholder(urlPassword(config.redisUrl))) found.push(`REDIS_URL (redisUrl): its password ${fix}`);
  if (config.databaseUrl !== undefined && isPlaceholder(urlPassword(config.databaseUrl))) found.push(`DATABASE_URL (databaseUrl): its password ${fix}`);
  // The S3 store's key is read by the AWS SDK, not by this schema; the placeholder is refused all the same.
  if (isPlaceholder(env.AWS_SECRET_ACCESS_KEY)) found.push(`AWS_SECRET_ACCESS_KEY: ${fix}`);
  return found;
}

/** Hides every password in connection URLs (`redis://:pw@host` → `redis://:***@host`), for messages and logs. */
export const redactUrlPasswords = (text: string): string => text.replace(/(\/\/[^/@\s:,]*:)[^@\s/,]*@/g, '$1***@');

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

/** The configuration with every secret setting's value replaced (for printing it). */
export function redactSecrets(config: Readonly<Config>): Record<string, unknown> {
  const copy = JSON.parse(JSON.stringify(config)) as Record<string, unknown>;
  for (const setting of listSettings()) {
    if (!setting.secret) continue;
    const path = setting.path.split('.');
    let node: Record<string, unknown> | undefined = copy;
    for (const key of path.slice(0, -1)) node = node?.[key] as Record<string, unknown> | undefined;
    const last = path[path.length - 1] as string;
    if (node && node[last] !== undefined) node[last] = setting.show !== undefined ? setting.show(node[last]) : Array.isArray(node[last]) ? (node[last] as unknown[]).map(() => '***') : '***';
  }
  for (const key of ['redisUrl', 'databaseUrl']) if (typeof copy[key] === 'string') copy[key] = redactUrlPasswords(copy[key] as string);
  return copy;
}

/** The README table of settings (npm run docs:config writes it; a test checks it is current). */
export function settingsMarkdownTable(): string {
  const rows = listSettings().map(
    (s) => `| \`${s.env}\` | ${s.defaultText === '' ? '(unset)' : `\`${s.defaultText}\``} | ${s.doc.replace(/\|/g, '\\|')} |`,
  );
  return ['| Variable | Default | Meaning |', '|---|---|---|', ...rows].join('\n');
}

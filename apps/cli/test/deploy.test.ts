import { execFileSync, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '@trawl/config';
import { parse } from 'yaml';
import { DATABASE_URL, REDIS_URL, REPO } from '../src/testing/index.js';

/**
 * The image and the compose fleet, validated without a Docker engine: Debian's docker-compose
 * (`apt install docker-compose`; .ci/run installs it) renders and checks docker-compose.yml
 * with .env.example, and the structure that matters is asserted on its output. The Dockerfile
 * and the deploy/ files are checked as text and YAML; the health check runs for real.
 */
const file = (path: string) => readFileSync(join(REPO, path), 'utf8');

function compose(args: string[], envFile = join(REPO, '.env.example')) {
  // Only PATH and HOME from this environment: the compose file must not depend on anything else.
  return spawnSync('docker-compose', ['-f', join(REPO, 'docker-compose.yml'), '--env-file', envFile, ...args], {
    cwd: REPO,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
  });
}

interface Service {
  image?: string;
  build?: unknown;
  command?: string[] | string;
  container_name?: string;
  ports?: ({ target: number; published: number | string; host_ip?: string } | string)[];
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
  deploy?: { replicas?: number };
  environment?: Record<string, string>;
  stop_grace_period?: string;
  volumes?: string[];
}

/** A published port as docker-compose renders it: `host_ip:published:target/proto` or the long form. */
function published(port: NonNullable<Service['ports']>[number]): { hostIp: string | null; target: number } {
  if (typeof port !== 'string') return { hostIp: port.host_ip ?? null, target: port.target };
  const [, hostIp, target] = /^(?:([\d.]+|\[[\d:a-f]+\]):)?\d+:(\d+)(?:\/\w+)?$/.exec(port) ?? [];
  return { hostIp: hostIp ?? null, target: Number(target) };
}

describe('docker-compose.yml', () => {
  const hasCompose = spawnSync('docker-compose', ['version'], { encoding: 'utf8' }).status === 0;

  it('needs docker-compose to be validated (apt install docker-compose; scripts/setup.sh and .ci/run install it)', () => {
    expect(hasCompose).toBe(true);
  });

  it('is valid with .env.example', () => {
    const result = compose(['config', '-q']);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  it('has the fleet: ordered start, healthchecks, scalable workers, two schedulers, durable Redis', () => {
    const result = compose(['config']);
    expect(result.status, result.stderr).toBe(0);
    const config = parse(result.stdout) as { services: Record<string, Service>; volumes: Record<string, unknown> };
    const services = config.services;
    expect(Object.keys(services).sort()).toEqual(['create-bucket', 'dashboard', 'grafana', 'minio', 'postgres', 'processor', 'prometheus', 'redis', 'renderer', 'scheduler', 'worker']);

    expect(services.redis?.healthcheck?.test).toContain('ping');
    expect(services.postgres?.healthcheck?.test).toContain('pg_isready');
    const redisCommand = (services.redis?.command as string[]).join(' ');
    expect(redisCommand).toMatch(/--appendonly yes --appendfsync everysec/);
    expect(redisCommand).toMatch(/--maxmemory-policy noeviction/);
    expect(services.redis?.image).toMatch(/^redis:8/);
    expect(services.redis?.volumes).toContain('redis:/data:rw');
    expect(services.postgres?.volumes?.some((v) => v.startsWith('postgres:/var/lib/postgresql/data'))).toBe(true);

    for (const app of ['worker', 'scheduler', 'dashboard', 'processor']) {
      const service = services[app] as Service;
      expect(service.image, app).toBe('trawl:latest');
      expect(service.command, app).toEqual([app === 'processor' ? 'worker' : app]);
      expect(service.depends_on, app).toEqual({
        redis: { condition: 'service_healthy' },
        postgres: { condition: 'service_healthy' },
        'create-bucket': { condition: 'service_completed_successfully' },
      });
      expect(service.environment?.REDIS_URL, app).toBe('redis://:change-me-redis@redis:6379');
      expect(service.environment?.TRAWL_SEEN_BACKEND, app).toBe('redisbloom');
    }
    // Scalable: nothing that two replicas could fight over.
    for (const app of ['worker', 'processor']) {
      expect(services[app]?.container_name, app).toBeUndefined();
      expect(services[app]?.ports, app).toBeUndefined();
      expect(services[app]?.stop_grace_period, app).toBe('45s');
    }
    expect(services.scheduler?.deploy?.replicas).toBe(2);
    expect(services.dashboard?.ports?.map((p) => published(p).target)).toEqual([8930]);
    expect(services['create-bucket']?.depends_on).toEqual({ minio: { condition: 'service_started' } });
    expect(Object.keys(config.volumes).sort()).toEqual(['grafana', 'minio', 'postgres', 'prometheus', 'redis']);
    // Bodies go to MinIO through the S3 store; the dashboard needs its API tokens.
    expect(services.worker?.environment?.TRAWL_CONTENT_STORE).toBe('s3');
    expect(services.worker?.environment?.TRAWL_S3_ENDPOINT).toBe('http://minio:9000');
    expect(services.dashboard?.environment?.TRAWL_API_TOKENS).toBe('change-me-api-token');
    expect(services.dashboard?.environment?.TRAWL_API_READ_TOKENS).toBe('change-me-prometheus-token');
    expect(services.postgres?.healthcheck?.test).toEqual(['CMD', 'pg_isready', '-h', '127.0.0.1', '-U', 'trawl', '-d', 'trawl']);
  });

  it('runs both stages in every worker by default, and the stages apart when .env says so', () => {
    const services = (parse(compose(['config']).stdout) as { services: Record<string, Service> }).services;
    expect(services.worker?.environment?.TRAWL_WORKER_ROLES).toBe('fetch,process,render');
    expect(services.processor?.environment?.TRAWL_WORKER_ROLES).toBe('process');
    expect(services.processor?.deploy?.replicas).toBe(0);
    expect(services.renderer?.environment?.TRAWL_WORKER_ROLES).toBe('render');
    expect(services.renderer?.deploy?.replicas).toBe(0);
    // Renderers run the image with Chromium: the Dockerfile's `renderer` target.
    expect(services.renderer?.image).toBe('trawl-renderer:latest');
    expect(services.renderer?.build).toMatchObject({ target: 'renderer' });
    // Everything else a processor or a renderer runs with is the worker's: the same crawl, stores and checks.
    const { TRAWL_WORKER_ROLES: _w, ...workerEnv } = services.worker?.environment ?? {};
    const { TRAWL_WORKER_ROLES: _p, ...processorEnv } = services.processor?.environment ?? {};
    const { TRAWL_WORKER_ROLES: _r, ...rendererEnv } = services.renderer?.environment ?? {};
    expect(processorEnv).toEqual(workerEnv);
    expect(rendererEnv).toEqual(workerEnv);
    expect(processorEnv.TRAWL_HEALTHCHECK_URL).toBe('http://127.0.0.1:9464/healthz');

    const split = join(tmpdir(), `trawl-split-${process.pid}.env`);
    writeFileSync(split, file('.env.example').replace(/^WORKER_ROLES=.*$/m, 'WORKER_ROLES=fetch').replace(/^PROCESSORS=.*$/m, 'PROCESSORS=3'));
    try {
      const result = compose(['config'], split);
      expect(result.status, result.stderr).toBe(0);
      const apart = (parse(result.stdout) as { services: Record<string, Service> }).services;
      expect(apart.worker?.environment?.TRAWL_WORKER_ROLES).toBe('fetch');
      expect(apart.processor?.deploy?.replicas).toBe(3);
    } finally {
      rmSync(split, { force: true });
    }
  });

  it('holds no secret: every password comes from the environment and is required', () => {
    const raw = file('docker-compose.yml');
    for (const line of file('.env.example').split('\n')) {
      const [name, value] = line.split('=');
      if (!name || !value || !/PASSWORD|SECRET|_USER$|TOKENS?$/.test(name)) continue;
      if (/PASSWORD|SECRET|TOKEN/.test(name)) expect(raw).not.toContain(value);
      expect(raw).toContain(`\${${name}:?`);
    }
    const empty = join(tmpdir(), `trawl-empty-${process.pid}.env`);
    writeFileSync(empty, '');
    const missing = compose(['config', '-q'], empty);
    expect(missing.status).not.toBe(0);
    expect(missing.stderr).toMatch(/set [A-Z_]+PASSWORD in \.env|set MINIO_ROOT_USER in \.env/);
  });

  it('publishes the dashboard, Prometheus and Grafana on 127.0.0.1 unless PUBLISH_ADDRESS says otherwise', () => {
    const services = (parse(compose(['config']).stdout) as { services: Record<string, Service> }).services;
    for (const [name, port] of [['dashboard', 8930], ['prometheus', 9090], ['grafana', 3000]] as const) {
      expect(services[name]?.ports?.map(published), name).toEqual([{ hostIp: '127.0.0.1', target: port }]);
    }
    // Nothing else is published at all.
    for (const [name, service] of Object.entries(services)) if (!['dashboard', 'prometheus', 'grafana'].includes(name)) expect(service.ports, name).toBeUndefined();
  });

  it('gives the apps least privilege: their own PostgreSQL role and a bucket-scoped MinIO user, never the root credentials', () => {
    const services = (parse(compose(['config']).stdout) as { services: Record<string, Service> }).services;
    for (const app of ['worker', 'processor', 'scheduler', 'dashboard']) {
      const env = services[app]?.environment ?? {};
      expect(env.DATABASE_URL, app).toBe('postgres://trawl:change-me-trawl-db@postgres:5432/trawl');
      expect(env.AWS_ACCESS_KEY_ID, app).toBe('trawl');
      expect(env.AWS_SECRET_ACCESS_KEY, app).toBe('change-me-s3');
    }
    // The root credentials reach only the servers themselves and the one-shot setup.
    const holders = (value: string) => Object.entries(services).filter(([, s]) => JSON.stringify(s).includes(value)).map(([name]) => name).sort();
    expect(holders('change-me-minio')).toEqual(['create-bucket', 'minio']);
    expect(holders('change-me-postgres')).toEqual(['postgres']);
    expect(services.postgres?.environment?.POSTGRES_USER).toBeUndefined();
    expect(services.postgres?.volumes).toContain(`${join(REPO, 'deploy/postgres/initdb')}:/docker-entrypoint-initdb.d:ro`);
    // The MinIO policy: read and write in the content bucket, nothing else (no delete, no other bucket).
    const setup = (services['create-bucket']?.command as string[]).join('\n');
    const format = /printf '(\{"Version".*?\})' "\$+S3_BUCKET" "\$+S3_BUCKET"/.exec(setup)?.[1];
    expect(format).toBeDefined();
    const policy = JSON.parse((format as string).replaceAll('%s', 'trawl-content')) as { Statement: { Action: string[]; Resource: string[] }[] };
    const actions = policy.Statement.flatMap((st) => st.Action).sort();
    expect(actions).toEqual(['s3:AbortMultipartUpload', 's3:GetBucketLocation', 's3:GetObject', 's3:ListBucket', 's3:ListBucketMultipartUploads', 's3:ListMultipartUploadParts', 's3:PutObject']);
    expect(policy.Statement.flatMap((st) => st.Resource).sort()).toEqual(['arn:aws:s3:::trawl-content', 'arn:aws:s3:::trawl-content/*']);
    expect(setup).toMatch(/mc admin policy attach local trawl-app --user "\$+S3_ACCESS_KEY"/);
  });

  it('points Prometheus at every app (workers and processors by DNS) and provisions Grafana from files', () => {
    const prometheus = parse(file('deploy/prometheus/prometheus.yml')) as { scrape_configs: { job_name: string; dns_sd_configs?: { names: string[] }[]; static_configs?: { targets: string[] }[] }[] };
    const jobs = new Map(prometheus.scrape_configs.map((job) => [job.job_name, job]));
    expect(jobs.get('worker')?.dns_sd_configs?.[0]?.names).toEqual(['worker']);
    expect(jobs.get('processor')?.dns_sd_configs?.[0]).toMatchObject({ names: ['processor'], port: 9464 });
    expect(jobs.get('scheduler')?.dns_sd_configs?.[0]?.names).toEqual(['scheduler']);
    expect(jobs.get('dashboard')?.static_configs?.[0]?.targets).toEqual(['dashboard:8930']);
    const datasources = parse(file('deploy/grafana/provisioning/datasources/prometheus.yml')) as { datasources: { url: string }[] };
    expect(datasources.datasources[0]?.url).toBe('http://prometheus:9090');
    const dashboards = parse(file('deploy/grafana/provisioning/dashboards/trawl.yml')) as { providers: { options: { path: string } }[] };
    expect(dashboards.providers[0]?.options.path).toBe('/etc/grafana/dashboards');
    expect(file('docker-compose.yml')).toContain('./deploy/grafana/dashboards:/etc/grafana/dashboards:ro');
  });
});

describe('Dockerfile', () => {
  const dockerfile = file('Dockerfile');

  it('runs compiled code with production dependencies only, as a non-root user, with a health check', () => {
    expect(dockerfile).toMatch(/^FROM \$\{NODE_IMAGE\} AS build$/m);
    expect(dockerfile).toMatch(/npm ci --no-audit --no-fund --ignore-scripts && npm rebuild esbuild msgpackr-extract && npm run build/);
    expect(dockerfile).toMatch(/npm ci --omit=dev --no-audit --no-fund --ignore-scripts && npm rebuild msgpackr-extract/);
    const runtime = dockerfile.slice(dockerfile.indexOf('AS runtime'));
    expect(runtime).toMatch(/NODE_ENV=production/);
    expect(runtime).toMatch(/^USER node$/m);
    expect(runtime).toMatch(/^HEALTHCHECK .*CMD \["trawl", "healthcheck"\]$/m);
    expect(runtime).toMatch(/^ENTRYPOINT \["trawl"\]$/m);
    // The runtime stage copies no sources: only what the build stage prepared, and deploy/.
    for (const [, from] of runtime.matchAll(/^COPY (?!--from)(\S+)/gm)) expect(from, from).toMatch(/^deploy\//);
  });

  it('runs no dependency\'s install script but those package.json approves, whatever npm the base image has', () => {
    const installs = dockerfile.split('\n').filter((line) => line.startsWith('RUN ') && line.includes('npm ci'));
    expect(installs).toHaveLength(2);
    for (const install of installs) expect(install).toContain('--ignore-scripts');
    const approved = Object.entries((JSON.parse(file('package.json')) as { allowScripts: Record<string, boolean> }).allowScripts)
      .filter(([, allowed]) => allowed)
      .map(([name]) => name)
      .sort();
    const rebuilt = [...dockerfile.matchAll(/npm rebuild ([\w@/ -]+?) &&/g)].flatMap((m) => (m[1] as string).trim().split(/\s+/));
    expect([...new Set(rebuilt)].sort()).toEqual(approved);
    expect(rebuilt.every((name) => approved.includes(name))).toBe(true);
  });

  it('copies into the runtime every directory the compiled code reads relative to itself', () => {
    const parts = /for part in ([\w ]+); do/.exec(dockerfile)?.[1]?.split(' ') ?? [];
    const sources = execFileSync('git', ['ls-files', 'apps/*/src/*.ts', 'libs/*/src/*.ts'], { cwd: REPO, encoding: 'utf8' }).split('\n').filter((f) => f && !f.includes('.test.'));
    const read = new Set<string>();
    for (const source of sources) {
      for (const [, dir] of file(source).matchAll(/(?:new URL\(|loadScripts\(import\.meta\.url, )'\.\.\/(\w+)\/?'/g)) read.add(dir as string);
    }
    expect([...read].sort()).toEqual(['lua', 'migrations', 'static']);
    for (const dir of read) expect(parts, dir).toContain(dir);
  });

  it('copies only files that exist', () => {
    for (const [, from] of dockerfile.matchAll(/^COPY (?!--from)(\S+) /gm)) {
      if (from !== '.') expect(existsSync(join(REPO, from as string)), from).toBe(true);
    }
  });

  it('has a renderer target: the runtime with Debian\'s chromium where trawl looks for it, as the node user, and the runtime stays the default', () => {
    const stages = [...dockerfile.matchAll(/^FROM (\S+)(?: AS (\S+))?$/gm)].map((m) => [m[1], m[2] ?? null]);
    expect(stages).toEqual([
      ['${NODE_IMAGE}', 'build'],
      ['${NODE_IMAGE}', 'prod-deps'],
      ['${NODE_IMAGE}', 'runtime'],
      ['runtime', 'renderer'],
      // The last stage is what a build without --target makes: the runtime, no browser.
      ['runtime', null],
    ]);
    const renderer = dockerfile.slice(dockerfile.indexOf('AS renderer'), dockerfile.lastIndexOf('\nFROM runtime'));
    expect(renderer).toMatch(/apt-get install -y --no-install-recommends chromium\b/);
    expect(renderer).toMatch(/rm -rf \/var\/lib\/apt\/lists/);
    const chromium = /^ENV TRAWL_RENDER_CHROMIUM=(\S+)$/m.exec(renderer)?.[1];
    // Debian's package puts it there, which is also the setting's default.
    expect(chromium).toBe('/usr/bin/chromium');
    expect(loadConfig({ env: {} }).render.chromiumPath).toBe(chromium);
    expect(renderer.trimEnd().split('\n').filter((line) => line.startsWith('USER ')).at(-1)).toBe('USER node');
    expect(renderer).not.toMatch(/^COPY /m);
  });

  it('keeps secrets and build output out of the build context', () => {
    const ignore = file('.dockerignore').split('\n');
    for (const entry of ['.env', '**/node_modules', '**/dist', '.trawl', '.git']) expect(ignore).toContain(entry);
    expect(ignore).toContain('!.env.example');
  });

  it('has an entry point for every app and for any trawl command', () => {
    const entry = file('deploy/entrypoint.sh');
    expect(entry).toMatch(/worker \| scheduler \| dashboard\)/);
    expect(entry).toContain('"$APP/apps/$name/dist/main.js"');
    expect(entry).toContain('"$APP/apps/cli/bin/trawl.js"');
    for (const app of ['worker', 'scheduler', 'dashboard']) expect(existsSync(join(REPO, 'apps', app, 'src', 'main.ts'))).toBe(true);
    expect(() => execFileSync('sh', ['-n', join(REPO, 'deploy/entrypoint.sh')])).not.toThrow();
  });
});

describe('scripts/setup-secrets.sh', () => {
  it('makes .env from .env.example with every placeholder random, mode 0600, and a second run changes nothing', () => {
    const dir = mkdtempSync(join(tmpdir(), 'trawl-secrets-'));
    try {
      const env = join(dir, '.env');
      const run = () => spawnSync('sh', [join(REPO, 'scripts/setup-secrets.sh'), '--env-file', env, '--example', join(REPO, '.env.example')], { encoding: 'utf8' });
      const first = run();
      expect(first.status, first.stderr).toBe(0);
      const made = readFileSync(env, 'utf8');
      const settings = (text: string) => text.split('\n').filter((line) => !line.startsWith('#')).join('\n');
      expect(settings(made)).not.toMatch(/change-me/i);
      expect(statSync(env).mode & 0o777).toBe(0o600);
      const value = (name: string) => new RegExp(`^${name}=(.*)$`, 'm').exec(made)?.[1] ?? '';
      expect(value('TRAWL_API_TOKENS')).toMatch(/^[0-9a-f]{48}$/);
      expect(value('REDIS_PASSWORD')).not.toBe(value('POSTGRES_PASSWORD'));
      expect(value('TRAWL_NAMESPACE')).toBe('trawl'); // not a secret: kept
      expect(run().status).toBe(0);
      expect(readFileSync(env, 'utf8')).toBe(made);
      // A placeholder put back (or a setting the example gained) is filled; the rest stays.
      writeFileSync(env, made.replace(/^GRAFANA_ADMIN_PASSWORD=.*$/m, 'GRAFANA_ADMIN_PASSWORD=change-me-grafana').replace(/^PROMETHEUS_TOKEN=.*\n/m, ''));
      expect(run().status).toBe(0);
      const again = readFileSync(env, 'utf8');
      expect(settings(again)).not.toMatch(/change-me/i);
      expect(again).toContain(`TRAWL_API_TOKENS=${value('TRAWL_API_TOKENS')}`);
      expect(again).toMatch(/^PROMETHEUS_TOKEN=[0-9a-f]{48}$/m);
      // trawl starts with what it made (the placeholders it would refuse).
      expect(() => loadConfig({ env: { TRAWL_API_TOKENS: value('TRAWL_API_TOKENS'), REDIS_URL: `redis://:${value('REDIS_PASSWORD')}@redis:6379` } })).not.toThrow();
      expect(() => loadConfig({ env: { TRAWL_API_TOKENS: 'change-me-api-token' } })).toThrow(/TRAWL_API_TOKENS.*placeholder/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('scripts/pin-images.sh', () => {
  it('writes each image\'s digest into the Dockerfile, .env.example and the compose fallbacks', () => {
    const dir = mkdtempSync(join(tmpdir(), 'trawl-pin-'));
    try {
      mkdirSync(join(dir, 'scripts'));
      mkdirSync(join(dir, 'bin'));
      for (const f of ['Dockerfile', '.env.example', 'docker-compose.yml', 'scripts/pin-images.sh']) copyFileSync(join(REPO, f), join(dir, f));
      // A registry stand-in: skopeo answers a digest made from the reference it is asked about.
      writeFileSync(join(dir, 'bin', 'skopeo'), '#!/bin/sh\nfor last; do :; done\nprintf "sha256:%s\\n" "$(printf %s "$last" | sha256sum | cut -c1-64)"\n', { mode: 0o755 });
      const result = spawnSync('bash', [join(dir, 'scripts/pin-images.sh'), '--write'], { encoding: 'utf8', env: { PATH: `${join(dir, 'bin')}:${process.env.PATH ?? ''}` } });
      expect(result.status, result.stderr).toBe(0);
      const digest = (ref: string) => createHash('sha256').update(`docker://${ref}`).digest('hex');
      expect(result.stdout).toContain(`REDIS_IMAGE=redis:8@sha256:${digest('docker.io/library/redis:8')}`);
      expect(readFileSync(join(dir, 'Dockerfile'), 'utf8')).toContain(`ARG NODE_IMAGE=node:20-bookworm-slim@sha256:${digest('docker.io/library/node:20-bookworm-slim')}`);
      const env = readFileSync(join(dir, '.env.example'), 'utf8');
      expect(env).toContain(`MINIO_IMAGE=minio/minio@sha256:${digest('docker.io/minio/minio')}`);
      expect(env).toContain('TRAWL_IMAGE=trawl:latest\n');
      expect(readFileSync(join(dir, 'docker-compose.yml'), 'utf8')).toContain(`\${GRAFANA_IMAGE:-grafana/grafana:12.1.0@sha256:${digest('docker.io/grafana/grafana:12.1.0')}}`);
      // Run again: every pin is resolved afresh from its tag, not stacked.
      expect(spawnSync('bash', [join(dir, 'scripts/pin-images.sh'), '--write'], { encoding: 'utf8', env: { PATH: `${join(dir, 'bin')}:${process.env.PATH ?? ''}` } }).status).toBe(0);
      expect(readFileSync(join(dir, '.env.example'), 'utf8')).toBe(env);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('deploy/postgres/initdb/10-trawl-role.sh', () => {
  it('makes a role that owns its database and nothing more: no superuser, no new databases or roles', async () => {
    const id = randomBytes(4).toString('hex');
    const role = `trawl_role_test_${id}`;
    const admin = new URL(DATABASE_URL);
    const psql = (url: string, sql: string) => spawnSync('psql', [url, '-X', '-q', '-t', '-A', '-v', 'ON_ERROR_STOP=1', '-c', sql], { encoding: 'utf8' });
    const app = new URL(DATABASE_URL);
    app.username = role;
    app.password = 'a-test-password';
    app.pathname = `/${role}`;
    try {
      const made = spawnSync('sh', [join(REPO, 'deploy/postgres/initdb/10-trawl-role.sh')], {
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '', PGHOST: admin.hostname, PGPORT: admin.port || '5432', POSTGRES_USER: decodeURIComponent(admin.username), TRAWL_DB_USER: role, TRAWL_DB_NAME: role, TRAWL_DB_PASSWORD: 'a-test-password' },
      });
      expect(made.status, made.stderr).toBe(0);
      expect(psql(DATABASE_URL, `SELECT rolsuper, rolcreatedb, rolcreaterole FROM pg_roles WHERE rolname = '${role}'`).stdout.trim()).toBe('f|f|f');
      // It owns its database: trawl creates each namespace's schema there.
      expect(psql(app.toString(), 'CREATE SCHEMA t_ns; CREATE TABLE t_ns.x (id int); SELECT current_user').stdout.trim()).toBe(role);
      expect(psql(app.toString(), `CREATE DATABASE ${role}_more`).stderr).toMatch(/permission denied/);
      expect(psql(app.toString(), `CREATE ROLE ${role}_more`).stderr).toMatch(/permission denied/);
      expect(psql(DATABASE_URL, `SELECT has_database_privilege('public', '${role}', 'CONNECT')`).stdout.trim()).toBe('f');
    } finally {
      psql(DATABASE_URL, `DROP DATABASE IF EXISTS ${role} WITH (FORCE)`);
      psql(DATABASE_URL, `DROP ROLE IF EXISTS ${role}`);
    }
  });
});

describe('deploy/healthcheck.mjs', () => {
  const run = (env: Record<string, string>) =>
    spawnSync(process.execPath, ['--conditions=trawl-source', '--import', 'tsx', join(REPO, 'deploy/healthcheck.mjs')], {
      cwd: REPO,
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '', ...env },
      timeout: 30_000,
    });

  it('is healthy while Redis and PostgreSQL answer, and says which one does not', () => {
    expect(run({ REDIS_URL, DATABASE_URL }).status).toBe(0);
    const down = run({ REDIS_URL: 'redis://127.0.0.1:1', DATABASE_URL });
    expect(down.status).toBe(1);
    expect(down.stderr).toMatch(/unhealthy: Redis does not answer/);
    const unset = run({ REDIS_URL });
    expect(unset.status).toBe(1);
    expect(unset.stderr).toMatch(/DATABASE_URL is not set/);
    // Three Node processes loading the sources through tsx: ~8 s each on a busy 2-core machine.
  }, 90_000);

  it('checks an HTTP endpoint instead when TRAWL_HEALTHCHECK_URL is set', () => {
    const down = run({ TRAWL_HEALTHCHECK_URL: 'http://127.0.0.1:1/healthz' });
    expect(down.status).toBe(1);
    expect(down.stderr).toMatch(/unhealthy: /);
  });
});

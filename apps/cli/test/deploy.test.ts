import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
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
  ports?: { target: number; published: number | string }[];
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
  deploy?: { replicas?: number };
  environment?: Record<string, string>;
  volumes?: string[];
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
    expect(Object.keys(services).sort()).toEqual(['create-bucket', 'dashboard', 'grafana', 'minio', 'postgres', 'prometheus', 'redis', 'scheduler', 'worker']);

    expect(services.redis?.healthcheck?.test).toContain('ping');
    expect(services.postgres?.healthcheck?.test).toContain('pg_isready');
    const redisCommand = (services.redis?.command as string[]).join(' ');
    expect(redisCommand).toMatch(/--appendonly yes --appendfsync everysec/);
    expect(redisCommand).toMatch(/--maxmemory-policy noeviction/);
    expect(services.redis?.image).toMatch(/^redis:8/);
    expect(services.redis?.volumes).toContain('redis:/data:rw');
    expect(services.postgres?.volumes?.some((v) => v.startsWith('postgres:/var/lib/postgresql/data'))).toBe(true);

    for (const app of ['worker', 'scheduler', 'dashboard']) {
      const service = services[app] as Service;
      expect(service.image, app).toBe('trawl:latest');
      expect(service.command, app).toEqual([app]);
      expect(service.depends_on, app).toEqual({
        redis: { condition: 'service_healthy' },
        postgres: { condition: 'service_healthy' },
        'create-bucket': { condition: 'service_completed_successfully' },
      });
      expect(service.environment?.REDIS_URL, app).toBe('redis://:change-me-redis@redis:6379');
      expect(service.environment?.TRAWL_SEEN_BACKEND, app).toBe('redisbloom');
    }
    // Scalable: nothing that two replicas could fight over.
    expect(services.worker?.container_name).toBeUndefined();
    expect(services.worker?.ports).toBeUndefined();
    expect(services.scheduler?.deploy?.replicas).toBe(2);
    expect(services.dashboard?.ports?.map((p) => p.target)).toEqual([8930]);
    expect(services['create-bucket']?.depends_on).toEqual({ minio: { condition: 'service_started' } });
    expect(Object.keys(config.volumes).sort()).toEqual(['grafana', 'minio', 'postgres', 'prometheus', 'redis']);
    // Bodies go to MinIO through the S3 store; the dashboard needs its API tokens.
    expect(services.worker?.environment?.TRAWL_CONTENT_STORE).toBe('s3');
    expect(services.worker?.environment?.TRAWL_S3_ENDPOINT).toBe('http://minio:9000');
    expect(services.dashboard?.environment?.TRAWL_API_TOKENS).toBe('change-me-api-token,change-me-prometheus-token');
  });

  it('holds no secret: every password comes from the environment and is required', () => {
    const raw = file('docker-compose.yml');
    for (const line of file('.env.example').split('\n')) {
      const [name, value] = line.split('=');
      if (!name || !value || !/PASSWORD|_USER$|TOKENS?$/.test(name)) continue;
      if (/PASSWORD|TOKEN/.test(name)) expect(raw).not.toContain(value);
      expect(raw).toContain(`\${${name}:?`);
    }
    const empty = join(tmpdir(), `trawl-empty-${process.pid}.env`);
    writeFileSync(empty, '');
    const missing = compose(['config', '-q'], empty);
    expect(missing.status).not.toBe(0);
    expect(missing.stderr).toMatch(/set [A-Z_]+PASSWORD in \.env|set MINIO_ROOT_USER in \.env/);
  });

  it('points Prometheus at every app (workers by DNS) and provisions Grafana from files', () => {
    const prometheus = parse(file('deploy/prometheus/prometheus.yml')) as { scrape_configs: { job_name: string; dns_sd_configs?: { names: string[] }[]; static_configs?: { targets: string[] }[] }[] };
    const jobs = new Map(prometheus.scrape_configs.map((job) => [job.job_name, job]));
    expect(jobs.get('worker')?.dns_sd_configs?.[0]?.names).toEqual(['worker']);
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
    expect(dockerfile).toMatch(/npm ci --no-audit --no-fund && npm run build/);
    expect(dockerfile).toMatch(/npm ci --omit=dev/);
    const runtime = dockerfile.slice(dockerfile.indexOf('AS runtime'));
    expect(runtime).toMatch(/NODE_ENV=production/);
    expect(runtime).toMatch(/^USER node$/m);
    expect(runtime).toMatch(/^HEALTHCHECK .*CMD \["trawl", "healthcheck"\]$/m);
    expect(runtime).toMatch(/^ENTRYPOINT \["trawl"\]$/m);
    // The runtime stage copies no sources: only what the build stage prepared, and deploy/.
    for (const [, from] of runtime.matchAll(/^COPY (?!--from)(\S+)/gm)) expect(from, from).toMatch(/^deploy\//);
  });

  it('copies only files that exist', () => {
    for (const [, from] of dockerfile.matchAll(/^COPY (?!--from)(\S+) /gm)) {
      if (from !== '.') expect(existsSync(join(REPO, from as string)), from).toBe(true);
    }
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
  });

  it('checks an HTTP endpoint instead when TRAWL_HEALTHCHECK_URL is set', () => {
    const down = run({ TRAWL_HEALTHCHECK_URL: 'http://127.0.0.1:1/healthz' });
    expect(down.status).toBe(1);
    expect(down.stderr).toMatch(/unhealthy: /);
  });
});

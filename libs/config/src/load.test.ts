import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isCidr } from './fields.js';
import { ConfigError, listSettings, loadConfig, redactSecrets } from './load.js';
import { frontierMaxQueued, userAgentOf } from './schema.js';

describe('loadConfig', () => {
  it('works with no input at all: defaults for one machine', () => {
    const config = loadConfig({ env: {} });
    expect(config.namespace).toBe('trawl');
    expect(config.policy.minDelayMs).toBe(1000);
    expect(config.policy.scope).toBe('domain');
    expect(config.policy.maxDepth).toBeUndefined();
    expect(config.worker.concurrency).toBe(32);
    expect(config.fetch.allowNetworks).toEqual([]);
    expect(config.redisUrl).toBeUndefined();
    expect(Object.isFrozen(config.policy)).toBe(true);
  });

  it.each([
    ['TRAWL_CONCURRENCY', '8', (c: ReturnType<typeof loadConfig>) => c.worker.concurrency, 8],
    ['TRAWL_SORT_QUERY', '0', (c: ReturnType<typeof loadConfig>) => c.policy.sortQuery, false],
    ['TRAWL_SORT_QUERY', 'false', (c: ReturnType<typeof loadConfig>) => c.policy.sortQuery, false],
    ['TRAWL_SORT_QUERY', 'YES', (c: ReturnType<typeof loadConfig>) => c.policy.sortQuery, true],
    ['TRAWL_SCOPE', 'Host', (c: ReturnType<typeof loadConfig>) => c.policy.scope, 'host'],
    ['TRAWL_ALLOW_NETWORKS', '127.0.0.0/8, ::1/128', (c: ReturnType<typeof loadConfig>) => c.fetch.allowNetworks, ['127.0.0.0/8', '::1/128']],
    ['TRAWL_ALLOW_NETWORKS', '10.0.0.5:8080,10.1.0.0/16:8000-8099,[fd00::/8]:443', (c: ReturnType<typeof loadConfig>) => c.fetch.allowNetworks, ['10.0.0.5:8080', '10.1.0.0/16:8000-8099', '[fd00::/8]:443']],
    ['TRAWL_SEEN_ERROR_RATE', '0.001', (c: ReturnType<typeof loadConfig>) => c.seen.errorRate, 0.001],
    ['TRAWL_MAX_DEPTH', '0', (c: ReturnType<typeof loadConfig>) => c.policy.maxDepth, 0],
    ['REDIS_URL', 'redis://10.0.0.1:6380/2', (c: ReturnType<typeof loadConfig>) => c.redisUrl, 'redis://10.0.0.1:6380/2'],
    ['TRAWL_MIN_DELAY_MS', '', (c: ReturnType<typeof loadConfig>) => c.policy.minDelayMs, 1000],
    ['TRAWL_SKIP_EXTENSIONS', 'pdf, .JPG,tar.gz', (c: ReturnType<typeof loadConfig>) => c.policy.skipExtensions, ['pdf', '.JPG', 'tar.gz']],
    ['TRAWL_SKIP_EXTENSIONS', '', (c: ReturnType<typeof loadConfig>) => c.policy.skipExtensions, undefined],
    ['TRAWL_DELAY_FORCE', 'true', (c: ReturnType<typeof loadConfig>) => c.politeness.forceDelay, true],
    ['TRAWL_DELAY_FORCE', '', (c: ReturnType<typeof loadConfig>) => c.politeness.forceDelay, false],
    ['TRAWL_CRAWL_DELAY_FLOOR_MS', '100', (c: ReturnType<typeof loadConfig>) => c.politeness.crawlDelayFloorMs, 100],
    ['TRAWL_CRAWL_DELAY_FLOOR_MS', '', (c: ReturnType<typeof loadConfig>) => c.politeness.crawlDelayFloorMs, 250],
    ['TRAWL_TIMEOUT_ATTEMPTS', '', (c: ReturnType<typeof loadConfig>) => c.worker.timeoutAttempts, 2],
    ['TRAWL_HOST_FAILURE_THRESHOLD', '', (c: ReturnType<typeof loadConfig>) => c.politeness.hostFailureThreshold, 3],
    ['TRAWL_ADAPTIVE_SAMPLES', '', (c: ReturnType<typeof loadConfig>) => c.politeness.adaptiveSamples, 3],
    ['TRAWL_ADAPTIVE_RESPONSE_CAP_MS', '', (c: ReturnType<typeof loadConfig>) => c.politeness.adaptiveResponseCapMs, 5000],
  ])('reads %s=%j', (name, value, pick, expected) => {
    expect(pick(loadConfig({ env: { [name]: value } }))).toEqual(expected);
  });

  it('stops naming every bad field, with the variable and what was given', () => {
    const attempt = () =>
      loadConfig({
        env: {
          TRAWL_CONCURRENCY: 'lots',
          TRAWL_SCOPE: 'planet',
          TRAWL_SORT_QUERY: 'maybe',
          TRAWL_ALLOW_NETWORKS: '127.0.0.0/8,not-a-net',
          DATABASE_URL: 'mysql://x',
          TRAWL_NAMESPACE: 'Bad-Name',
          TRAWL_MIN_DELAY_MS: '-5',
        },
      });
    expect(attempt).toThrow(ConfigError);
    try {
      attempt();
    } catch (error) {
      const problems = (error as ConfigError).problems.join('\n');
      for (const name of ['TRAWL_CONCURRENCY', 'TRAWL_SCOPE', 'TRAWL_SORT_QUERY', 'TRAWL_ALLOW_NETWORKS', 'DATABASE_URL', 'TRAWL_NAMESPACE', 'TRAWL_MIN_DELAY_MS']) {
        expect(problems).toContain(name);
      }
      expect(problems).toContain('"lots"');
      expect((error as ConfigError).code).toBe('ERR_CONFIG_INVALID');
    }
  });

  it('layers file < env < overrides', () => {
    const dir = mkdtempSync(join(tmpdir(), 'trawl-config-'));
    const file = join(dir, 'trawl.json');
    writeFileSync(file, JSON.stringify({ worker: { concurrency: 4, attempts: 2 }, policy: { minDelayMs: 50 } }));
    const config = loadConfig({
      env: { TRAWL_CONFIG_FILE: file, TRAWL_CONCURRENCY: '6' },
      overrides: { policy: { minDelayMs: '75' } },
    });
    expect(config.worker.concurrency).toBe(6);
    expect(config.worker.attempts).toBe(2);
    expect(config.policy.minDelayMs).toBe(75);
  });

  it('TRAWL_CONTENT_STORE=s3 without a bucket stops naming TRAWL_S3_BUCKET', () => {
    expect(() => loadConfig({ env: { TRAWL_CONTENT_STORE: 's3' } })).toThrow(/TRAWL_S3_BUCKET \(store\.s3Bucket\): required when TRAWL_CONTENT_STORE=s3/);
    const config = loadConfig({ env: { TRAWL_CONTENT_STORE: 'S3', TRAWL_S3_BUCKET: 'pages', TRAWL_S3_FORCE_PATH_STYLE: 'yes' } });
    expect(config.store).toMatchObject({ backend: 's3', s3Bucket: 'pages', s3Prefix: '', s3ForcePathStyle: true, s3MaxAttempts: 4 });
    expect(loadConfig({ env: {} }).store.backend).toBe('local');
  });

  it('near-duplicate and WARC settings: defaults and bounds', () => {
    const config = loadConfig({ env: {} });
    expect(config.dedup).toEqual({ nearDupDistance: 3, nearDupStoreBody: true, nearDupFollowLinks: true });
    expect(config.warc).toEqual({ write: false, dir: '.trawl/warc', prefix: 'trawl', maxFileBytes: 1_000_000_000 });
    expect(() => loadConfig({ env: { TRAWL_NEAR_DUP_DISTANCE: '4' } })).toThrow(/TRAWL_NEAR_DUP_DISTANCE/);
    expect(() => loadConfig({ env: { TRAWL_WARC_PREFIX: 'a/b' } })).toThrow(/TRAWL_WARC_PREFIX/);
  });

  it('render settings: auto by default, an unknown mode stops the process', () => {
    const config = loadConfig({ env: {} });
    expect(config.render).toMatchObject({ mode: 'auto', contextScope: 'host', maxOpenPages: 2, allowOtherHosts: false, allowHosts: [], samplePages: 3 });
    expect(loadConfig({ env: { TRAWL_RENDER: 'Auto', TRAWL_RENDER_ALLOW_HOSTS: 'cdn.example, static.example:8443' } }).render).toMatchObject({
      mode: 'auto',
      allowHosts: ['cdn.example', 'static.example:8443'],
    });
    expect(() => loadConfig({ env: { TRAWL_RENDER: 'sometimes', TRAWL_RENDER_CONCURRENCY: '0' } })).toThrow(/TRAWL_RENDER \(render\.mode\)[\s\S]*TRAWL_RENDER_CONCURRENCY/);
  });

  it('refuses a lease that does not outlast the fetch deadline plus the hold margin, naming both settings', () => {
    expect(() => loadConfig({ env: { TRAWL_LEASE_MS: '65000' } })).toThrow(
      /TRAWL_LEASE_MS \(worker\.leaseMs\): must be longer than TRAWL_FETCH_DEADLINE_MS \(60000 ms\) plus 5000 ms.*— got "65000"/,
    );
    expect(() => loadConfig({ env: { TRAWL_LEASE_MS: '8000', TRAWL_FETCH_DEADLINE_MS: '3000' } })).toThrow(/TRAWL_FETCH_DEADLINE_MS \(3000 ms\)/);
    expect(loadConfig({ env: { TRAWL_LEASE_MS: '8001', TRAWL_FETCH_DEADLINE_MS: '3000' } }).worker.leaseMs).toBe(8001);
  });

  it('refuses an idle-host TTL shorter than the longest wait a URL can be in', () => {
    expect(() => loadConfig({ env: { TRAWL_IDLE_HOST_TTL_MS: '600000' } })).toThrow(/TRAWL_IDLE_HOST_TTL_MS \(dispatch\.idleHostTtlMs\): must be 0 or at least 3900000 ms/);
    expect(loadConfig({ env: { TRAWL_IDLE_HOST_TTL_MS: '0' } }).dispatch.idleHostTtlMs).toBe(0);
    expect(loadConfig().dispatch.idleHostTtlMs).toBe(86_400_000);
  });

  it('reports an unreadable config file', () => {
    expect(() => loadConfig({ env: { TRAWL_CONFIG_FILE: '/nonexistent/trawl.json' } })).toThrow(/TRAWL_CONFIG_FILE/);
  });

  describe('REDIS_URL and TRAWL_REDIS_CLUSTER', () => {
    const problemsOf = (env: Record<string, string>): string => {
      try {
        loadConfig({ env });
      } catch (error) {
        return (error as ConfigError).problems.join('\n');
      }
      return '';
    };

    it.each([
      [{ REDIS_URL: 'redis://10.0.0.5:7000' }, false, 'redis://10.0.0.5:7000'],
      [{ REDIS_URL: 'redis://10.0.0.5:7000', TRAWL_REDIS_CLUSTER: 'true' }, true, 'redis://10.0.0.5:7000'],
      [{ REDIS_URL: 'redis://10.0.0.5:7000, redis://10.0.0.6:7000', TRAWL_REDIS_CLUSTER: '1' }, true, 'redis://10.0.0.5:7000, redis://10.0.0.6:7000'],
      [{ REDIS_URL: 'rediss://u:p@a:7000,rediss://u:p@b:7000/0', TRAWL_REDIS_CLUSTER: 'yes' }, true, 'rediss://u:p@a:7000,rediss://u:p@b:7000/0'],
    ])('accepts %j', (env, cluster, url) => {
      const config = loadConfig({ env });
      expect(config.redisCluster).toBe(cluster);
      expect(config.redisUrl).toBe(url);
    });

    it.each([
      [{ REDIS_URL: 'redis://a:7000,redis://b:7000' }, /REDIS_URL \(redisUrl\): several URLs .*TRAWL_REDIS_CLUSTER=true/],
      [{ TRAWL_REDIS_CLUSTER: 'true' }, /TRAWL_REDIS_CLUSTER \(redisCluster\): a Redis Cluster needs REDIS_URL/],
      [{ REDIS_URL: 'redis://a:7000/2', TRAWL_REDIS_CLUSTER: 'true' }, /REDIS_URL \(redisUrl\): a Redis Cluster has only database 0/],
      [{ REDIS_URL: 'redis://a:7000,rediss://b:7000', TRAWL_REDIS_CLUSTER: 'true' }, /share scheme, user and password/],
      [{ REDIS_URL: 'redis://a:7000,http://b:7000', TRAWL_REDIS_CLUSTER: 'true' }, /REDIS_URL \(redisUrl\): expected a redis or rediss URL, or several/],
      [{ REDIS_URL: 'redis://a:7000', TRAWL_REDIS_CLUSTER: 'maybe' }, /TRAWL_REDIS_CLUSTER \(redisCluster\): expected true\/false/],
    ])('refuses %j', (env, problem) => {
      expect(problemsOf(env)).toMatch(problem);
    });
  });

  it('declares each environment variable once', () => {
    const names = listSettings().map((s) => s.env);
    expect(new Set(names).size).toBe(names.length);
    for (const s of listSettings()) expect(s.doc.length).toBeGreaterThan(10);
  });
});

describe('isCidr', () => {
  it.each([
    ['127.0.0.0/8', true],
    ['10.0.0.1', true],
    ['fd00::/8', true],
    ['::1/128', true],
    ['10.0.0.0/33', false],
    ['fd00::/129', false],
    ['10.0.0/8', false],
    ['example.com/8', false],
    ['10.0.0.0/8/1', false],
    ['10.0.0.0/x', false],
  ])('%s → %s', (value, expected) => {
    expect(isCidr(value)).toBe(expected);
  });
});

describe('secret settings', () => {
  it('never repeats a secret back in an error, nor prints it', () => {
    let message = '';
    try {
      loadConfig({ env: { TRAWL_API_TOKENS: 'short-secret-xy,another-long-enough-token' } });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/TRAWL_API_TOKENS \(dashboard\.apiTokens\): each token must be at least 16 characters/);
    expect(message).not.toContain('short-secret-xy');
    expect(message).not.toContain('another-long-enough-token');
    const config = loadConfig({ env: { TRAWL_API_TOKENS: 'a-token-of-sixteen-chars,b-token-of-sixteen-chars' } });
    expect(config.dashboard.apiTokens).toEqual(['a-token-of-sixteen-chars', 'b-token-of-sixteen-chars']);
    const shown = JSON.stringify(redactSecrets(config));
    expect(shown).not.toContain('token-of-sixteen');
    expect((redactSecrets(config).dashboard as { apiTokens: string[] }).apiTokens).toEqual(['***', '***']);
  });
});

describe('the namespace', () => {
  it.each(['public', 'information_schema', 'pg_catalog', 'pg_temp_1'])('refuses %s, one of PostgreSQL\'s own schemas', (name) => {
    expect(() => loadConfig({ env: { TRAWL_NAMESPACE: name } })).toThrow(/TRAWL_NAMESPACE.*PostgreSQL's own schemas/);
  });
});

describe('placeholder secrets', () => {
  it('refuses the public placeholders of .env.example at start, naming each setting and never the value', () => {
    let message = '';
    try {
      loadConfig({
        env: {
          TRAWL_API_TOKENS: 'change-me-api-token,change-me-prometheus-token',
          REDIS_URL: 'redis://:change-me-redis@redis:6379',
          DATABASE_URL: 'postgres://trawl:change-me-trawl-db@postgres:5432/trawl',
          AWS_SECRET_ACCESS_KEY: 'change-me-s3',
        },
      });
    } catch (error) {
      message = (error as Error).message;
    }
    for (const name of ['TRAWL_API_TOKENS', 'REDIS_URL', 'DATABASE_URL', 'AWS_SECRET_ACCESS_KEY']) expect(message).toMatch(new RegExp(`${name}.*placeholder.*setup-secrets`));
    expect(message).not.toContain('change-me-redis');
    const random = 'f3a1c0de9b7e4d2a8c6b5a4f3e2d1c0b';
    expect(() => loadConfig({ env: { TRAWL_API_TOKENS: random, REDIS_URL: `redis://:${random}@redis:6379`, AWS_SECRET_ACCESS_KEY: random } })).not.toThrow();
  });
});

describe('passwords in connection URLs', () => {
  it('never repeats a password of REDIS_URL or DATABASE_URL in an error, nor prints it', () => {
    let message = '';
    try {
      loadConfig({ env: { REDIS_URL: 'http://:hunter2-redis@redis:6379', DATABASE_URL: 'mysql://trawl:hunter2-db@db/trawl' } });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/REDIS_URL.*http:\/\/:\*\*\*@redis:6379/);
    expect(message).toMatch(/DATABASE_URL.*trawl:\*\*\*@db/);
    expect(message).not.toContain('hunter2');
    const config = loadConfig({ env: { REDIS_URL: 'redis://:hunter2-redis@redis:6379', DATABASE_URL: 'postgres://trawl:hunter2-db@db/trawl' } });
    expect(JSON.stringify(redactSecrets(config))).not.toContain('hunter2');
  });
});

describe('the crawler\'s identity', () => {
  it('names the product token and the contact URL in the User-Agent; TRAWL_USER_AGENT replaces it whole', () => {
    expect(userAgentOf(loadConfig({ env: {} }))).toBe('trawl/0.1 (+https://github.com/trawl-crawler/trawl)');
    expect(userAgentOf(loadConfig({ env: { TRAWL_ROBOTS_TOKEN: 'acmebot', TRAWL_CONTACT_URL: 'https://acme.example/crawler' } }))).toBe('acmebot/0.1 (+https://acme.example/crawler)');
    expect(userAgentOf(loadConfig({ env: { TRAWL_USER_AGENT: 'custom/9' } }))).toBe('custom/9');
  });

  it('refuses a contact that is no http(s) URL, and a Signature-Agent without a signing key', () => {
    expect(() => loadConfig({ env: { TRAWL_CONTACT_URL: 'mailto:ops@acme.example' } })).toThrow(/TRAWL_CONTACT_URL/);
    expect(() => loadConfig({ env: { TRAWL_SIGNATURE_AGENT_URL: 'https://acme.example' } })).toThrow(/TRAWL_SIGNATURE_KEY_FILE/);
  });
});

describe('frontierMaxQueued', () => {
  it.each<[Record<string, string>, number]>([
    // One worker's polite day: 32 fetch slots, one fetch each every second, for 86,400 s.
    [{}, 2_764_800],
    [{ TRAWL_CONCURRENCY: '8', TRAWL_MIN_DELAY_MS: '500' }, 8 * 172_800],
    [{ TRAWL_MIN_DELAY_MS: '7000' }, 32 * Math.ceil(86_400_000 / 7000)],
    [{ TRAWL_FRONTIER_MAX_QUEUED: '5000' }, 5000],
    [{ TRAWL_FRONTIER_MAX_QUEUED: '0' }, 0],
  ])('%o → %i', (env, expected) => {
    expect(frontierMaxQueued(loadConfig({ env }))).toBe(expected);
  });

  it('refuses a negative threshold, naming it', () => {
    expect(() => loadConfig({ env: { TRAWL_FRONTIER_MAX_QUEUED: '-1' } })).toThrow(/TRAWL_FRONTIER_MAX_QUEUED/);
  });
});

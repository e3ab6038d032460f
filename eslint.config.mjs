// Lint for the whole workspace. The module-boundary rule is what keeps the layering real:
// each project's tags say what it may import (other projects by type) and which npm packages
// it may import (one owner per I/O package: got only in fetch, pg only in db, …).
import js from '@eslint/js';
import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';
import globals from 'globals';

// Dev dependencies that tests may import (web-bot-auth: an independent verifier of trawl's request
// signatures; kubernetes-models: schema validators for the Kubernetes manifests).
const testOnly = ['vitest', 'vitest/node', 'yaml', 'web-bot-auth', 'web-bot-auth/crypto', 'kubernetes-models/*', '@kubernetes-models/keda/*'];
const allow = (...pkgs) => [...pkgs, ...testOnly];

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', '**/.trawl/**', '**/.nx/**', '**/coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.mjs', '**/*.js'],
    languageOptions: { globals: { ...globals.node } },
    plugins: { '@nx': nx },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-restricted-properties': ['error', {
        object: 'process', property: 'env',
        message: 'Only @trawl/config (and app entry points) read the environment; take a typed config slice instead.',
      }],
      '@nx/enforce-module-boundaries': ['error', {
        enforceBuildableLibDependency: false,
        allow: [],
        depConstraints: [
          // Layers: app → role → runtime → service → model → adapter → platform → domain/contract,
          // with the fetch-job pipeline (type:pipeline) beside the service layer: only the worker
          // role composes it. The crawl model every process shares (policy, counters, discovery)
          // is type:model, so a scheduler or a dashboard never imports the worker's pipeline.
          // The embedded servers (type:embedded) are for the `trawl` command alone.
          // The CLI composes the role apps (worker, scheduler, dashboard) in one process; a role app
          // is a composition root over the runtime and the libs.
          { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['type:role', 'type:runtime', 'type:service', 'type:model', 'type:adapter', 'type:platform', 'type:domain', 'type:contract', 'type:testing', 'type:embedded'] },
          { sourceTag: 'type:role', onlyDependOnLibsWithTags: ['type:runtime', 'type:service', 'type:pipeline', 'type:model', 'type:adapter', 'type:platform', 'type:domain', 'type:contract'] },
          { sourceTag: 'scope:dashboard', notDependOnLibsWithTags: ['type:pipeline'] },
          { sourceTag: 'scope:scheduler', notDependOnLibsWithTags: ['type:pipeline'] },
          { sourceTag: 'type:runtime', onlyDependOnLibsWithTags: ['type:service', 'type:model', 'type:adapter', 'type:platform', 'type:domain', 'type:contract'] },
          { sourceTag: 'type:service', onlyDependOnLibsWithTags: ['type:model', 'type:adapter', 'type:platform', 'type:domain', 'type:contract'] },
          { sourceTag: 'type:pipeline', onlyDependOnLibsWithTags: ['type:model', 'type:adapter', 'type:platform', 'type:domain', 'type:contract'] },
          { sourceTag: 'type:model', onlyDependOnLibsWithTags: ['type:adapter', 'type:platform', 'type:domain', 'type:contract'] },
          { sourceTag: 'type:embedded', onlyDependOnLibsWithTags: ['type:platform', 'type:domain', 'type:contract'] },
          { sourceTag: 'type:adapter', onlyDependOnLibsWithTags: ['type:platform', 'type:domain', 'type:contract'] },
          { sourceTag: 'type:platform', onlyDependOnLibsWithTags: ['type:domain', 'type:contract'] },
          { sourceTag: 'type:domain', onlyDependOnLibsWithTags: ['type:domain', 'type:contract'] },
          { sourceTag: 'type:contract', onlyDependOnLibsWithTags: ['type:contract'] },
          { sourceTag: 'type:testing', onlyDependOnLibsWithTags: ['type:domain', 'type:contract'] },
          { sourceTag: 'type:bench', onlyDependOnLibsWithTags: ['type:app', 'type:role', 'type:runtime', 'type:service', 'type:pipeline', 'type:model', 'type:adapter', 'type:platform', 'type:domain', 'type:contract', 'type:testing'] },
          // One owner per I/O package: each scope lists the npm packages it may import.
          { sourceTag: 'scope:core', allowedExternalImports: allow() },
          { sourceTag: 'scope:config', allowedExternalImports: allow('zod') },
          { sourceTag: 'scope:url', allowedExternalImports: allow('tldts') },
          { sourceTag: 'scope:recrawl', allowedExternalImports: allow() },
          { sourceTag: 'scope:sitemap', allowedExternalImports: allow('sax') },
          { sourceTag: 'scope:politeness', allowedExternalImports: allow() },
          { sourceTag: 'scope:telemetry', allowedExternalImports: allow('pino', 'prom-client') },
          { sourceTag: 'scope:redis', allowedExternalImports: allow('ioredis') },
          { sourceTag: 'scope:seen', allowedExternalImports: allow('ioredis') },
          { sourceTag: 'scope:robots', allowedExternalImports: allow('robots-parser', 'ioredis', 'zod') },
          { sourceTag: 'scope:frontier', allowedExternalImports: allow('ioredis') },
          { sourceTag: 'scope:queue', allowedExternalImports: allow('bullmq', 'ioredis', 'zod') },
          { sourceTag: 'scope:fetch', allowedExternalImports: allow('got', 'cacheable-lookup', 'ipaddr.js', 'hpagent', 'socks-proxy-agent') },
          { sourceTag: 'scope:parse', allowedExternalImports: allow('htmlparser2', 'domhandler', 'cheerio', 'encoding-sniffer', 'iconv-lite', 'franc-min', 'iso-639-3', 'iso-639-3/iso6393-to-1.js') },
          { sourceTag: 'scope:store', allowedExternalImports: allow('@aws-sdk/client-s3', '@aws-sdk/lib-storage', 's3rver') },
          { sourceTag: 'scope:dedup', allowedExternalImports: allow('xxhash-wasm') },
          { sourceTag: 'scope:warc', allowedExternalImports: allow('warcio') },
          { sourceTag: 'scope:render', allowedExternalImports: allow('playwright-core') },
          { sourceTag: 'scope:db', allowedExternalImports: allow('pg', 'node-pg-migrate') },
          { sourceTag: 'scope:embedded', allowedExternalImports: allow('@electric-sql/pglite', '@electric-sql/pglite-socket') },
          { sourceTag: 'scope:model', allowedExternalImports: allow('zod') },
          { sourceTag: 'scope:crawl', allowedExternalImports: allow('zod') },
          { sourceTag: 'scope:dispatch', allowedExternalImports: allow() },
          { sourceTag: 'scope:runtime', allowedExternalImports: allow() },
          { sourceTag: 'scope:testweb', allowedExternalImports: allow('zod') },
          { sourceTag: 'scope:cli', allowedExternalImports: allow('commander', 'tsx', 'tsx/esm/api', 'playwright-core', 'cli-progress') },
          { sourceTag: 'scope:worker', allowedExternalImports: allow('zod') },
          { sourceTag: 'scope:scheduler', allowedExternalImports: allow() },
          { sourceTag: 'scope:dashboard', allowedExternalImports: allow('fastify', '@fastify/cookie', '@fastify/formbody', '@fastify/rate-limit', '@bull-board/api', '@bull-board/api/bullMQAdapter', '@bull-board/fastify', '@bull-board/ui/package.json', 'uplot', 'zod', 'playwright-core') },
          { sourceTag: 'scope:bench', allowedExternalImports: allow('ioredis', 'pg', '@crawlee/cheerio', '@crawlee/memory-storage') },
        ],
      }],
    },
  },
  {
    // The browser is built by a composition root only: the pipeline renders through the Renderer
    // port of @trawl/render and must never load Playwright, even through the render lib's door.
    files: ['libs/**/*.ts'],
    ignores: ['libs/render/**'],
    rules: {
      'no-restricted-imports': ['error', { paths: [
        { name: '@trawl/render/chromium', message: 'Take a Renderer (from @trawl/render); only an app builds the ChromiumRenderer.' },
        { name: 'playwright-core', message: 'Only @trawl/render/chromium drives the browser.' },
      ] }],
    },
  },
  {
    // The dashboard's pages run in the browser (uPlot is loaded beside them).
    files: ['apps/dashboard/static/**/*.js'],
    languageOptions: { sourceType: 'script', globals: { ...globals.browser } },
  },
  {
    // Entry points and the config lib are the only readers of process.env.
    files: ['libs/config/src/**/*.ts', 'apps/*/src/main.ts', '**/*.test.ts', '**/src/testing/**/*.ts', '**/test/**/*.ts', 'bench/src/**/*.ts', 'vitest.config.ts', '**/bin/*.js', 'deploy/*.mjs', 'scripts/*.mjs', 'scripts/*.ts'],
    rules: { 'no-restricted-properties': 'off' },
  },
);

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { escapeHtml } from './http.js';
import { hostParams } from './schemas.js';

const STATIC_DIR = fileURLToPath(new URL('../static/', import.meta.url));

/** The few files the pages load, all served from here (nothing from another site). */
function staticFiles(): Map<string, { type: string; body: Buffer }> {
  const require = createRequire(import.meta.url);
  const uplot = (file: string) => require.resolve(`uplot/dist/${file}`);
  return new Map([
    ['app.js', { type: 'text/javascript; charset=utf-8', body: readFileSync(`${STATIC_DIR}app.js`) }],
    ['app.css', { type: 'text/css; charset=utf-8', body: readFileSync(`${STATIC_DIR}app.css`) }],
    ['uplot.js', { type: 'text/javascript; charset=utf-8', body: readFileSync(uplot('uPlot.iife.min.js')) }],
    ['uplot.css', { type: 'text/css; charset=utf-8', body: readFileSync(uplot('uPlot.min.css')) }],
  ]);
}

interface PageOptions {
  title: string;
  page: 'overview' | 'host' | 'freshness' | 'docs';
  csrf: string;
  namespace: string;
  data?: Record<string, string>;
  body: string;
}

function layout(o: PageOptions): string {
  const data = Object.entries(o.data ?? {})
    .map(([k, v]) => ` data-${k}="${escapeHtml(v)}"`)
    .join('');
  const nav = (href: string, label: string, page?: string) => `<a href="${href}"${page === o.page ? ' aria-current="page"' : ''}>${label}</a>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="csrf-token" content="${escapeHtml(o.csrf)}">
<title>${escapeHtml(o.title)} — trawl</title>
<link rel="stylesheet" href="/static/uplot.css"><link rel="stylesheet" href="/static/app.css">
</head><body data-page="${o.page}"${data}>
<header><strong class="brand">trawl</strong><span class="ns">${escapeHtml(o.namespace)}</span>
<nav>${nav('/', 'Overview', 'overview')}${nav('/queues', 'Queues')}${nav('/freshness', 'Freshness', 'freshness')}${nav('/v1/docs', 'API', 'docs')}</nav>
<form class="host-lookup" action="/hosts" method="get"><input name="host" placeholder="host, e.g. example.com" aria-label="Go to host" required></form>
<form method="post" action="/signout"><input type="hidden" name="_csrf" value="${escapeHtml(o.csrf)}"><button class="link">Sign out</button></form>
<form method="post" action="/signout/everywhere"><input type="hidden" name="_csrf" value="${escapeHtml(o.csrf)}"><button class="link" title="End every session signed in with this token">Sign out everywhere</button></form>
</header>
<main>${o.body}</main>
<p class="status" id="status" role="status" aria-live="polite"></p>
<script src="/static/uplot.js"></script><script src="/static/app.js"></script>
</body></html>`;
}

const card = (id: string, title: string, inner: string, wide = false) => `<section class="card${wide ? ' wide' : ''}" id="${id}"><h2>${title}</h2>${inner}</section>`;

function overviewBody(): string {
  return `<div class="toolbar"><span>Crawl: <b id="crawl-state">…</b></span>
<button id="pause-all" data-action="/v1/crawl/pause">Pause crawl</button><button id="resume-all" data-action="/v1/crawl/resume">Resume crawl</button></div>
<div class="grid">
${card('rate', 'Fetch rate vs polite capacity', `<p class="big"><span id="fetch-rate">–</span> <small>fetches/s of</small> <span id="capacity">–</span> <small>polite capacity</small> (<span id="utilization">–</span>)</p><div class="chart" id="rate-chart"></div><p class="note">Polite capacity: Σ over hosts with work (not paused) of 1 / the delay in force, estimated from a sample of <span id="sampled">–</span> hosts.</p>`, true)}
${card('frontier', 'Frontier', `<dl><dt>Queued URLs</dt><dd id="queued">–</dd><dt>Leased (in flight)</dt><dd id="leased">–</dd><dt>Oldest queued URL</dt><dd id="oldest-age">–</dd><dt>Done</dt><dd id="done">–</dd><dt title="Fetched pages waiting for the process stage">Process backlog</dt><dd id="process-backlog">–</dd><dt>Oldest waiting page</dt><dd id="process-oldest-age">–</dd><dt title="Seeds enter the frontier only while it holds fewer queued URLs than TRAWL_FRONTIER_MAX_QUEUED; above it they wait in the seeds queue">Seed admission</dt><dd id="admission-state">–</dd><dt>Admission threshold</dt><dd id="admission-threshold">–</dd></dl><div class="chart" id="frontier-chart"></div>`, true)}
${card('hosts', 'Hosts', `<dl><dt>Ready (due)</dt><dd id="hosts-ready">–</dd><dt>Waiting</dt><dd id="hosts-waiting">–</dd><dt>In flight</dt><dd id="hosts-in-flight">–</dd><dt>Backing off</dt><dd id="hosts-backoff">–</dd><dt>Paused</dt><dd id="hosts-paused">–</dd></dl><h3>Most queued</h3><table><thead><tr><th>Host</th><th>Queued</th><th>Delay</th></tr></thead><tbody id="top-hosts"></tbody></table>`)}
${card('outcomes', 'Fetch outcomes', `<table><tbody id="by-class"></tbody></table><h3>Error codes (recorded pages)</h3><table><tbody id="error-codes"></tbody></table>`)}
${card('dead', 'Dead letters', `<p class="big" id="dead-count">–</p><h3>Top reasons</h3><table><tbody id="dead-reasons"></tbody></table><p><a href="/queues">Retry in bull-board →</a></p>`)}
${card('recrawl', 'Re-crawl deadlines', `<p class="big" id="miss-rate">–</p><p class="note">Share of re-crawls in the last day that came after their due time + 5 min.</p><dl><dt>Re-crawls</dt><dd id="recrawls">–</dd><dt>Late</dt><dd id="late">–</dd><dt>Overdue pages</dt><dd id="overdue">–</dd></dl>`)}
${card('queues', 'Queues', `<table><thead><tr><th>Queue</th><th>Waiting</th><th>Active</th><th>Delayed</th><th>Failed</th><th>Completed</th></tr></thead><tbody id="queue-rows"></tbody></table>`, true)}
${card('processes', 'Processes', `<dl><dt>Workers (fetch consumers)</dt><dd id="workers">–</dd></dl><h3>Worker processes</h3><ul id="worker-processes"></ul><h3>Schedulers</h3><ul id="schedulers"></ul><h3>Database</h3><dl id="db"></dl>`)}
</div>`;
}

function hostBody(host: string): string {
  return `<h1>Host <code id="host-name">${escapeHtml(host)}</code></h1>
<div class="toolbar"><span>State: <b id="host-state">…</b></span><button id="pause-host" data-action="/v1/crawl/domains/${encodeURIComponent(host)}/pause">Pause host</button><button id="resume-host" data-action="/v1/crawl/domains/${encodeURIComponent(host)}/resume">Resume host</button>
<span>Rendering: <b id="host-render">…</b></span>${(['auto', 'always', 'never'] as const).map((mode) => `<button id="render-${mode}" data-action="/v1/crawl/domains/${encodeURIComponent(host)}/render" data-body='{"mode":"${mode}"}'>Render: ${mode}</button>`).join('')}</div>
<div class="grid">
${card('politeness', 'Politeness', `<dl><dt>Delay in force</dt><dd id="delay">–</dd><dt>Why</dt><dd id="delay-reason">–</dd><dt>Terms</dt><dd id="delay-terms">–</dd><dt>Last fetch</dt><dd id="last-fetch">–</dd><dt>Next allowed fetch</dt><dd id="next-fetch">–</dd><dt>Back-off</dt><dd id="backoff">–</dd><dt>Proxy tier</dt><dd id="proxy-tier">–</dd><dt>Refusals</dt><dd id="refusals">–</dd><dt>Partition</dt><dd id="partition">–</dd><dt>Rank</dt><dd id="rank">–</dd></dl>`)}
${card('queue', 'Queue', `<dl><dt>Queued URLs</dt><dd id="queue-depth">–</dd><dt>In flight</dt><dd id="in-flight">–</dd><dt>Dead letters</dt><dd id="host-dead">–</dd></dl><dl id="url-states"></dl>`)}
${card('robots', 'robots.txt', `<dl><dt>State</dt><dd id="robots-state">–</dd><dt>Fetched</dt><dd id="robots-fetched">–</dd><dt>Crawl-delay</dt><dd id="robots-delay">–</dd></dl><h3>Rules for us</h3><ul id="robots-rules" class="mono"></ul>`)}
${card('fetches', 'Recent fetches', `<p class="note" id="rendered-summary"></p><table><thead><tr><th>When</th><th>Status</th><th>URL</th><th>ms</th><th>Rendered</th><th></th></tr></thead><tbody id="fetch-rows"></tbody></table>`, true)}
</div>`;
}

function freshnessBody(): string {
  return `<h1>Freshness</h1>
<div class="grid">${card('fresh-total', 'All hosts', `<dl id="fresh-total-dl"></dl>`, true)}
${card('fresh-hosts', 'By host', `<table><thead><tr><th>Host</th><th>Pages</th><th>Scheduled</th><th>Overdue</th><th>Oldest overdue</th><th>Re-crawls</th><th>Late</th><th>Deadline misses</th><th>Median change interval</th></tr></thead><tbody id="fresh-rows"></tbody></table>`, true)}</div>`;
}

/** A readable reference of the OpenAPI document, rendered here (no script, no outside resource). */
function docsBody(doc: Record<string, unknown>): string {
  const paths = doc.paths as Record<string, Record<string, Record<string, unknown>>>;
  const info = doc.info as { title: string; version: string; description: string };
  const parts: string[] = [`<h1>${escapeHtml(info.title)} <small>${escapeHtml(info.version)}</small></h1><p>${escapeHtml(info.description)}</p><p><a href="/v1/openapi.json">OpenAPI 3.1 document (JSON)</a></p>`];
  for (const [path, methods] of Object.entries(paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const params = (op.parameters as { name: string; in: string; required: boolean; description?: string }[]).map(
        (p) => `<li><code>${escapeHtml(p.name)}</code> (${p.in}${p.required ? ', required' : ''})${p.description ? ` — ${escapeHtml(p.description)}` : ''}</li>`,
      );
      const body = op.requestBody as { content: Record<string, { schema: unknown }> } | undefined;
      const responses = Object.entries(op.responses as Record<string, { description: string }>).map(([s, r]) => `<li><code>${s}</code> ${escapeHtml(r.description)}</li>`);
      parts.push(`<section class="card wide op" id="${escapeHtml(String(op.operationId))}"><h2><span class="method ${method}">${method.toUpperCase()}</span> <code>${escapeHtml(path)}</code></h2>
<p><b>${escapeHtml(String(op.summary))}</b>${op.description ? ` — ${escapeHtml(String(op.description))}` : ''}</p>
${params.length ? `<h3>Parameters</h3><ul>${params.join('')}</ul>` : ''}
${body ? `<h3>Request body</h3><pre>${escapeHtml(JSON.stringify(body.content['application/json']?.schema, null, 2))}</pre>` : ''}
<h3>Responses</h3><ul>${responses.join('')}</ul></section>`);
    }
  }
  parts.push(`<section class="card wide"><h2>Schemas</h2><pre>${escapeHtml(JSON.stringify((doc.components as { schemas: unknown }).schemas, null, 2))}</pre></section>`);
  return parts.join('\n');
}

/** trawl's own pages: the overview, a host, freshness, the API reference, and their static files. */
export function registerPages(app: FastifyInstance, options: { namespace: string; openapi: () => Record<string, unknown> }): void {
  const files = staticFiles();
  const csrf = (request: FastifyRequest) => request.caller?.csrf ?? '';
  const html = (reply: FastifyReply, body: string) => reply.type('text/html; charset=utf-8').header('cache-control', 'no-store').send(body);
  const common = { namespace: options.namespace };

  app.get('/static/:file', async (request, reply) => {
    const file = files.get((request.params as { file: string }).file);
    if (!file) return reply.code(404).type('text/plain').send('not found');
    return reply.type(file.type).header('cache-control', 'private, max-age=300').send(file.body);
  });
  app.get('/', async (request, reply) => html(reply, layout({ ...common, title: 'Overview', page: 'overview', csrf: csrf(request), body: overviewBody() })));
  app.get('/hosts', async (request, reply) => {
    const host = String((request.query as { host?: unknown }).host ?? '').trim().toLowerCase();
    return reply.redirect(host ? `/hosts/${encodeURIComponent(host)}` : '/', 303);
  });
  app.get('/hosts/:host', async (request, reply) => {
    const parsed = hostParams.safeParse(request.params);
    if (!parsed.success) return reply.code(400).type('text/plain; charset=utf-8').send('not a host name');
    const { host } = parsed.data;
    return html(reply, layout({ ...common, title: host, page: 'host', csrf: csrf(request), data: { host }, body: hostBody(host) }));
  });
  app.get('/freshness', async (request, reply) => html(reply, layout({ ...common, title: 'Freshness', page: 'freshness', csrf: csrf(request), body: freshnessBody() })));
  app.get('/v1/docs', async (request, reply) => html(reply, layout({ ...common, title: 'API reference', page: 'docs', csrf: csrf(request), body: docsBody(options.openapi()) })));
}

// trawl's pages: poll the REST API and update in place (no build step, no framework).
(() => {
  'use strict';
  const body = document.body;
  const csrf = document.querySelector('meta[name="csrf-token"]').getAttribute('content');
  const $ = (id) => document.getElementById(id);
  const POINTS = 300;

  const num = (n, digits = 0) => (n === null || n === undefined || Number.isNaN(n) ? '–' : Number(n).toLocaleString('en', { maximumFractionDigits: digits, minimumFractionDigits: 0 }));
  const pct = (x) => (x === null || x === undefined ? '–' : `${(x * 100).toFixed(1)} %`);
  const secs = (s) => {
    if (s === null || s === undefined) return '–';
    if (s < 90) return `${s.toFixed(0)} s`;
    if (s < 5400) return `${(s / 60).toFixed(1)} min`;
    if (s < 172800) return `${(s / 3600).toFixed(1)} h`;
    return `${(s / 86400).toFixed(1)} d`;
  };
  const ms = (v) => (v === null || v === undefined ? '–' : v >= 1000 ? `${(v / 1000).toFixed(v % 1000 ? 2 : 0)} s` : `${v} ms`);
  const when = (iso) => {
    if (!iso) return '–';
    const delta = (Date.parse(iso) - Date.now()) / 1000;
    const rel = Math.abs(delta) < 1 ? 'now' : delta > 0 ? `in ${secs(delta)}` : `${secs(-delta)} ago`;
    return `${new Date(iso).toLocaleTimeString()} (${rel})`;
  };
  const set = (id, value) => {
    const el = $(id);
    if (el) el.textContent = value;
  };
  const status = (text, error = false) => {
    const el = $('status');
    el.textContent = text;
    el.className = error ? 'status error' : 'status';
  };
  const cell = (tr, value, href) => {
    const td = document.createElement('td');
    if (href) {
      const a = document.createElement('a');
      a.href = href;
      a.textContent = value;
      td.appendChild(a);
    } else if (value instanceof Node) td.appendChild(value);
    else td.textContent = value;
    tr.appendChild(td);
  };
  /** Replaces a table body's rows: each item becomes cells (text, or [text, href], or a node). */
  const rows = (id, items, cells) => {
    const tbody = $(id);
    if (!tbody) return;
    const next = document.createDocumentFragment();
    for (const item of items) {
      const tr = document.createElement('tr');
      for (const c of cells(item)) {
        if (Array.isArray(c)) cell(tr, c[0], c[1]);
        else cell(tr, c);
      }
      next.appendChild(tr);
    }
    tbody.replaceChildren(next);
  };
  const definitions = (id, pairs) => {
    const dl = $(id);
    if (!dl) return;
    const next = document.createDocumentFragment();
    for (const [k, v] of pairs) {
      const dt = document.createElement('dt');
      dt.textContent = k;
      const dd = document.createElement('dd');
      dd.textContent = v;
      next.append(dt, dd);
    }
    dl.replaceChildren(next);
  };

  async function api(path, options = {}) {
    const res = await fetch(path, {
      method: options.method ?? 'GET',
      credentials: 'same-origin',
      headers: { accept: 'application/json', 'x-csrf-token': csrf, ...(options.body ? { 'content-type': 'application/json' } : {}) },
      body: options.body ? JSON.stringify(options.body) : undefined,
    });
    if (res.status === 401) {
      location.href = `/signin?next=${encodeURIComponent(location.pathname)}`;
      throw new Error('signed out');
    }
    const data = res.headers.get('content-type')?.includes('json') ? await res.json() : null;
    if (!res.ok) throw new Error(data?.error ? `${data.error.code}: ${data.error.message}` : `HTTP ${res.status}`);
    return data;
  }

  function poll(everyMs, step) {
    let timer;
    const run = async () => {
      try {
        await step();
        status(`updated ${new Date().toLocaleTimeString()}`);
      } catch (error) {
        status(String(error.message ?? error), true);
      }
      timer = setTimeout(run, everyMs);
    };
    run();
    return { now: () => (clearTimeout(timer), run()) };
  }

  /** A time-series chart (uPlot) that keeps the last POINTS samples. */
  function chart(id, series) {
    const el = $(id);
    if (!el || !window.uPlot) return { push() {} };
    const data = [[], ...series.map(() => [])];
    const plot = new window.uPlot(
      {
        width: el.clientWidth || 600,
        height: 180,
        series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.color, width: 2, fill: s.fill }))],
        axes: [{}, { size: 60 }],
        scales: { x: { time: true } },
        legend: { show: true },
      },
      data,
      el,
    );
    new ResizeObserver(() => plot.setSize({ width: el.clientWidth || 600, height: 180 })).observe(el);
    return {
      push(values) {
        data[0].push(Date.now() / 1000);
        values.forEach((v, i) => data[i + 1].push(v ?? null));
        if (data[0].length > POINTS) for (const d of data) d.shift();
        plot.setData(data);
      },
    };
  }

  // Buttons that POST to the API (pause, resume, refresh) — with the session's CSRF token.
  let refreshPage = () => undefined;
  document.addEventListener('click', async (event) => {
    const button = event.target.closest('button[data-action]');
    if (!button) return;
    event.preventDefault();
    button.disabled = true;
    try {
      const result = await api(button.dataset.action, { method: 'POST', body: button.dataset.body ? JSON.parse(button.dataset.body) : undefined });
      status(`${button.textContent}: done${result?.estimated_crawl_at ? ` (due ${when(result.estimated_crawl_at)})` : ''}`);
      refreshPage();
    } catch (error) {
      status(`${button.textContent}: ${error.message}`, true);
    } finally {
      button.disabled = false;
    }
  });

  function overview() {
    const rate = chart('rate-chart', [
      { label: 'fetches/s', color: '#2456c7', fill: '#2456c722' },
      { label: 'polite capacity/s', color: '#1a9850' },
    ]);
    const depth = chart('frontier-chart', [
      { label: 'queued URLs', color: '#7b3294' },
      { label: 'oldest queued (s)', color: '#d95f02' },
    ]);
    const p = poll(2000, async () => {
      const s = await api('/v1/crawl/stats');
      const f = s.frontier;
      const waiting = s.queues.filter((q) => q.name.startsWith('fetch-p')).reduce((n, q) => n + q.waiting + q.active + q.delayed, 0);
      const idle = f.queued === 0 && f.leased === 0 && waiting === 0;
      set('crawl-state', s.paused.all ? 'paused' : idle ? (f.done > 0 ? 'idle (done)' : 'idle') : 'running');
      set('fetch-rate', num(s.rate.fetchesPerSecond, 2));
      set('capacity', num(s.rate.politeCapacityPerSecond, 2));
      set('utilization', s.rate.utilization === null ? '–' : pct(s.rate.utilization));
      set('sampled', num(s.rate.hostsSampled));
      rate.push([s.rate.fetchesPerSecond, s.rate.politeCapacityPerSecond]);
      set('queued', num(f.queued));
      set('leased', num(f.leased));
      set('done', num(f.done));
      set('oldest-age', f.oldestQueuedAgeS === null ? 'none queued' : secs(f.oldestQueuedAgeS));
      set('process-backlog', num(f.processBacklog));
      set('process-oldest-age', f.processOldestAgeS === null ? 'none waiting' : secs(f.processOldestAgeS));
      const a = s.admission;
      set('admission-state', a.state === 'paused' ? `paused since ${when(a.since)}: seeds wait in the seeds queue until fewer than ${num(a.resumeBelow)} are queued` : 'admitting');
      set('admission-threshold', a.maxQueued === 0 ? 'no limit' : `${num(a.queued)} of ${num(a.maxQueued)} queued (resume below ${num(a.resumeBelow)})`);
      depth.push([f.queued, f.oldestQueuedAgeS]);
      set('hosts-ready', num(f.hostsReady));
      set('hosts-waiting', num(f.hostsWaiting));
      set('hosts-in-flight', num(f.hostsInFlight));
      set('hosts-backoff', num(f.hostsBackingOff));
      set('hosts-paused', s.paused.all ? 'all (crawl paused)' : num(s.paused.hosts));
      rows('top-hosts', s.topHosts, (h) => [[h.host, `/hosts/${encodeURIComponent(h.host)}`], num(h.queued), ms(h.delayMs)]);
      rows('by-class', Object.entries(s.outcomes.byClass), ([k, v]) => [k === 'error' ? 'no response (errors)' : `HTTP ${k}`, num(v)]);
      rows('error-codes', s.outcomes.errorCodes, (e) => [e.code, num(e.pages)]);
      set('dead-count', num(s.deadLetters.count));
      rows('dead-reasons', s.deadLetters.topReasons, (r) => [r.reason, num(r.count)]);
      set('miss-rate', s.recrawl.deadlineMissRate === null ? 'no re-crawls yet' : pct(s.recrawl.deadlineMissRate));
      set('recrawls', num(s.recrawl.recrawls));
      set('late', num(s.recrawl.late));
      set('overdue', num(s.recrawl.overdue));
      rows('queue-rows', s.queues, (q) => [q.name, num(q.waiting), num(q.active), num(q.delayed), num(q.failed), num(q.completed)]);
      set('workers', num(s.workers));
      const members = (id, list) =>
        $(id).replaceChildren(...list.map((m) => Object.assign(document.createElement('li'), { textContent: `${m.member}: partitions ${m.partitions.join(', ') || 'none'}` })));
      members('worker-processes', s.workerProcesses);
      members('schedulers', s.schedulers);
      definitions('db', [...Object.entries(s.db.urls).map(([k, v]) => [`URLs ${k}`, num(v)]), ['Pages recorded', num(s.db.pages)]]);
    });
    refreshPage = p.now;
  }

  function host() {
    const name = body.dataset.host;
    const p = poll(2000, async () => {
      const [s, f] = await Promise.all([
        api(`/v1/crawl/domains/${encodeURIComponent(name)}/status`).catch((error) => {
          if (String(error.message).startsWith('ERR_NOT_FOUND')) return null;
          throw error;
        }),
        api(`/v1/crawl/domains/${encodeURIComponent(name)}/fetches?limit=30`),
      ]);
      if (!s) {
        set('host-state', 'unknown to the crawl');
        return;
      }
      set('host-state', s.paused ? (s.blocked_reason ? 'paused: refuses the crawler' : 'paused') : s.in_flight ? 'fetching' : s.queue_depth > 0 ? 'queued' : 'idle');
      set('host-render', s.render_override ?? 'auto');
      set('delay', ms(s.crawl_delay_ms));
      set('delay-reason', { default: 'the configured delay', 'crawl-delay': 'robots.txt Crawl-delay', backoff: 'back-off', adaptive: 'response time × factor', capped: 'capped at the maximum delay' }[s.delay_reason]);
      const t = s.delay_terms;
      set('delay-terms', `base ${ms(t.base_ms)} (${t.base}), back-off ${ms(t.backoff_ms)}, adaptive ${ms(t.adaptive_ms)}, max ${ms(t.max_delay_ms)}`);
      set('last-fetch', s.last_fetched_at ? `${when(s.last_fetched_at)} — ${s.last_status ?? s.last_error ?? ''}` : 'never');
      set('next-fetch', when(s.next_available_at));
      set('backoff', s.backoff_streak > 0 || s.backoff_ms > 0 ? `${ms(s.backoff_ms)} after ${s.backoff_streak} failure(s)${s.backoff_until ? `, until ${when(s.backoff_until)}` : ''}` : 'none');
      set('partition', String(s.partition));
      set('rank', `score ${s.rank.score.toFixed(2)} — ${num(s.rank.linking_hosts)} linking host(s), seed priority ${s.rank.seed_priority}`);
      set('proxy-tier', `${s.proxy_tier ?? 'direct (no proxies)'}${s.tier_level > 0 ? ` — moved up ${s.tier_level} tier(s) after refusals` : ''}`);
      set('refusals', s.blocked_reason ?? (s.refusals > 0 ? `${s.refusals} in a row` : 'none'));
      set('queue-depth', num(s.queue_depth));
      set('in-flight', s.in_flight ? 'yes' : 'no');
      set('host-dead', num(s.dead_letters));
      definitions('url-states', Object.entries(s.urls).map(([k, v]) => [`URLs ${k}`, num(v)]));
      set('robots-state', `${s.robots.state}${s.robots.status ? ` (HTTP ${s.robots.status})` : ''}${s.robots.reason ? ` — ${s.robots.reason}` : ''}`);
      set('robots-fetched', when(s.robots.fetched_at));
      set('robots-delay', s.robots.crawl_delay_ms === null ? 'none' : ms(s.robots.crawl_delay_ms));
      const rules = $('robots-rules');
      rules.replaceChildren(...(s.robots.rules.length ? s.robots.rules : [{ allow: true, pattern: '(no rules: everything allowed)' }]).map((r) => Object.assign(document.createElement('li'), { textContent: `${r.allow ? 'Allow' : 'Disallow'}: ${r.pattern}` })));
      rows('fetch-rows', f.fetches, (x) => {
        const button = Object.assign(document.createElement('button'), { textContent: 'Re-crawl now', className: 'small' });
        button.dataset.action = `/v1/crawl/urls/${x.url_hash}/refresh`;
        const rendered = x.render_reason === null ? '–' : `${x.rendered ? 'yes' : 'no'}: ${x.render_reason}`;
        return [when(x.fetched_at), String(x.http_status ?? x.error_code ?? '–'), x.url, x.fetch_ms === null ? '–' : String(x.fetch_ms), rendered, button];
      });
      const renderedCount = f.fetches.filter((x) => x.rendered).length;
      set('rendered-summary', `Rendered in headless Chromium: ${renderedCount} of the ${f.fetches.length} latest pages.`);
    });
    refreshPage = p.now;
  }

  function freshness() {
    const p = poll(5000, async () => {
      const r = await api('/v1/crawl/freshness');
      const t = r.total;
      definitions('fresh-total-dl', [
        ['Pages', num(t.pages)],
        ['Scheduled', num(t.scheduled)],
        ['Overdue', num(t.overdue)],
        ['Oldest overdue', secs(t.oldestOverdueS)],
        ['Re-crawls (last day)', num(t.recrawls)],
        ['Late', num(t.late)],
        ['Deadline-miss rate', t.deadlineMissRate === null ? 'no re-crawls yet' : pct(t.deadlineMissRate)],
        ['Median change interval', secs(t.medianChangeIntervalS)],
      ]);
      rows('fresh-rows', r.hosts, (h) => [[h.host, `/hosts/${encodeURIComponent(h.host)}`], num(h.pages), num(h.scheduled), num(h.overdue), secs(h.oldestOverdueS), num(h.recrawls), num(h.late), h.deadlineMissRate === null ? '–' : pct(h.deadlineMissRate), secs(h.medianChangeIntervalS)]);
    });
    refreshPage = p.now;
  }

  ({ overview, host, freshness })[body.dataset.page]?.();
})();

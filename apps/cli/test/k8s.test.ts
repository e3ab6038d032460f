import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ScaledObject } from '@kubernetes-models/keda/keda.sh/v1alpha1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { Ingress } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Namespace, Secret, Service } from 'kubernetes-models/v1';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { REPO } from '../src/testing/index.js';

/**
 * deploy/k8s, rendered and validated offline: `kubectl kustomize` renders each overlay (kubectl
 * with kustomize ≥ 5, which this kind of machine ships), and every object is checked against the
 * Kubernetes API's schema (kubernetes-models, ajv validators generated from Kubernetes' OpenAPI
 * document) or KEDA's CRD schema (@kubernetes-models/keda). Those validators check types,
 * required fields and enums, not unknown fields: what matters most (probes, grace periods,
 * autoscaling) is also asserted field by field below.
 */
interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  [field: string]: any;
}

const VALIDATORS: Record<string, (o: K8sObject) => { validate(): void }> = {
  'v1/Namespace': (o) => new Namespace(o as never),
  'v1/ConfigMap': (o) => new ConfigMap(o as never),
  'v1/Secret': (o) => new Secret(o as never),
  'v1/Service': (o) => new Service(o as never),
  'apps/v1/Deployment': (o) => new Deployment(o as never),
  'policy/v1/PodDisruptionBudget': (o) => new PodDisruptionBudget(o as never),
  'networking.k8s.io/v1/Ingress': (o) => new Ingress(o as never),
  'autoscaling/v2/HorizontalPodAutoscaler': (o) => new HorizontalPodAutoscaler(o as never),
  'keda.sh/v1alpha1/ScaledObject': (o) => new ScaledObject(o as never),
};

/** Validation problems of one object, or a note that no schema is known for its kind. */
function problemsOf(o: K8sObject): string | null {
  const make = VALIDATORS[`${o.apiVersion}/${o.kind}`];
  if (!make) return `${o.apiVersion}/${o.kind}: no schema vendored for this kind`;
  try {
    make(o).validate();
    return null;
  } catch (error) {
    return `${o.kind}/${o.metadata.name}: ${(error as Error).message}`;
  }
}

const hasKubectl = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).status === 0;

const rendered = new Map<string, string>();
function render(overlay: string): K8sObject[] {
  const cached = rendered.get(overlay);
  if (cached !== undefined) return parseAllDocuments(cached).map((d) => d.toJSON() as K8sObject);
  const result = spawnSync('kubectl', ['kustomize', join(REPO, 'deploy/k8s', overlay)], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' } });
  if (result.status !== 0) throw new Error(`kubectl kustomize ${overlay}: ${result.stderr}`);
  rendered.set(overlay, result.stdout);
  return parseAllDocuments(result.stdout).map((d) => d.toJSON() as K8sObject);
}

const find = (objects: K8sObject[], kind: string, name: string): K8sObject => {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind}/${name} in ${objects.map((o) => `${o.kind}/${o.metadata.name}`).join(', ')}`);
  return found;
};

const msOf = (value: string | undefined, fallback: number) => (value === undefined ? fallback : Number(value));

describe('deploy/k8s', () => {
  it('needs kubectl with kustomize to render (this kind of machine ships it)', () => {
    expect(hasKubectl).toBe(true);
  });

  it('the validators refuse a broken object (so this test can fail)', () => {
    const [deployment] = render('base').filter((o) => o.kind === 'Deployment');
    const broken = structuredClone(deployment as K8sObject);
    broken.spec.template.spec.terminationGracePeriodSeconds = 'sixty';
    expect(problemsOf(broken)).toMatch(/terminationGracePeriodSeconds must be integer/);
    const so = structuredClone(find(render('overlays/example'), 'ScaledObject', 'trawl-worker'));
    so.spec.triggers[0].metadata.threshold = 24;
    expect(problemsOf(so)).toMatch(/threshold must be string/);
    expect(problemsOf({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'x' } })).toMatch(/no schema/);
  });

  describe.each(['overlays/example', 'overlays/example-cpu-hpa'])('%s', (overlay) => {
    const objects = hasKubectl ? render(overlay) : [];

    it('renders, and every object validates against the Kubernetes or KEDA schema', () => {
      expect(objects.length).toBeGreaterThan(0);
      expect(objects.map(problemsOf).filter((p) => p !== null)).toEqual([]);
      for (const o of objects.filter((x) => x.kind !== 'Namespace')) expect(o.metadata.namespace, `${o.kind}/${o.metadata.name}`).toBe('trawl');
    });

    it('runs each app with its settings, probes on /healthz, a grace period above the drain, resources and no root', () => {
      const config = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('trawl-config-')) as K8sObject;
      const secret = find(objects, 'Secret', 'trawl');
      const drainMs = msOf(config.data.TRAWL_DRAIN_TIMEOUT_MS, 30_000);
      const metricsPort = Number(config.data.TRAWL_METRICS_PORT);
      const ports = { worker: metricsPort, processor: metricsPort, renderer: metricsPort, scheduler: metricsPort, dashboard: 8930 };
      for (const app of ['worker', 'processor', 'renderer', 'scheduler', 'dashboard'] as const) {
        const d = find(objects, 'Deployment', `trawl-${app}`);
        const pod = d.spec.template.spec;
        const [c] = pod.containers;
        expect(c.args, app).toEqual([app === 'processor' || app === 'renderer' ? 'worker' : app]);
        // Renderers run the image's `renderer` target (with Chromium), pushed beside trawl's.
        expect(c.image, app).toBe(app === 'renderer' ? 'registry.example.com/trawl-renderer:0.1.0' : 'registry.example.com/trawl:0.1.0');
        expect(c.envFrom, app).toEqual([{ configMapRef: { name: config.metadata.name } }, { secretRef: { name: secret.metadata.name } }]);
        // The probes reach the port the app really serves /healthz on.
        const env = Object.fromEntries((c.env ?? []).map((e: { name: string; value: string }) => [e.name, e.value]));
        const served = app === 'dashboard' ? Number(env.TRAWL_DASHBOARD_PORT) : ports[app];
        expect(served, app).toBe(ports[app]);
        for (const probe of [c.readinessProbe, c.livenessProbe]) {
          expect(probe.httpGet.path, app).toBe('/healthz');
          const port = c.ports.find((p: { name: string }) => p.name === probe.httpGet.port);
          expect(port?.containerPort, app).toBe(served);
        }
        if (app !== 'dashboard') expect(config.data.TRAWL_METRICS_HOST).toBe('0.0.0.0');
        // SIGTERM → drain (TRAWL_DRAIN_TIMEOUT_MS) → exit, with at least 10 s to spare before SIGKILL.
        if (app !== 'dashboard') expect(pod.terminationGracePeriodSeconds * 1000, app).toBeGreaterThanOrEqual(drainMs + 10_000);
        expect(c.resources.requests.cpu && c.resources.requests.memory && c.resources.limits.memory, app).toBeTruthy();
        expect(pod.securityContext.runAsNonRoot, app).toBe(true);
        expect(pod.securityContext.runAsUser, app).toBe(1000);
        expect(c.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
      }
      expect(find(objects, 'Deployment', 'trawl-worker').spec.replicas).toBeUndefined();
      expect(find(objects, 'Deployment', 'trawl-processor').spec.replicas).toBeUndefined();
      // Renderers only where rendering is split off the workers: scaled by KEDA on the render
      // queue (from zero), else none unless an overlay sets the count.
      expect(find(objects, 'Deployment', 'trawl-renderer').spec.replicas).toBe(overlay === 'overlays/example' ? undefined : 0);
      expect(find(objects, 'Deployment', 'trawl-renderer').spec.template.spec.containers[0].env).toEqual([{ name: 'TRAWL_WORKER_ROLES', value: 'render' }]);
      const scheduler = find(objects, 'Deployment', 'trawl-scheduler');
      expect(scheduler.spec.replicas).toBe(2);
      const pdb = find(objects, 'PodDisruptionBudget', 'trawl-scheduler');
      expect(pdb.spec.minAvailable).toBe(1);
      expect(pdb.spec.selector.matchLabels).toEqual(scheduler.spec.selector.matchLabels);
      const service = find(objects, 'Service', 'trawl-dashboard');
      expect(service.spec.selector).toEqual(find(objects, 'Deployment', 'trawl-dashboard').spec.selector.matchLabels);
      expect(find(objects, 'Ingress', 'trawl-dashboard').spec.rules[0].http.paths[0].backend.service.name).toBe('trawl-dashboard');
    });

    it('runs processors as workers with the process role alone, and workers with both stages', () => {
      const worker = find(objects, 'Deployment', 'trawl-worker');
      const processor = find(objects, 'Deployment', 'trawl-processor');
      const [w] = worker.spec.template.spec.containers;
      const [p] = processor.spec.template.spec.containers;
      expect(p.env).toEqual([{ name: 'TRAWL_WORKER_ROLES', value: 'process' }]);
      // The workers keep the default (fetch,process,render): nothing in the base sets their roles.
      expect(w.env).toBeUndefined();
      const config = objects.find((o) => o.kind === 'ConfigMap') as K8sObject;
      expect(config.data.TRAWL_WORKER_ROLES).toBeUndefined();
      // Everything but the role and the CPU is the worker's: probes, grace period, pod defaults.
      const { env: _pe, resources: _pr, ...processorContainer } = p;
      const { env: _we, resources: _wr, ...workerContainer } = w;
      expect(processorContainer).toEqual(workerContainer);
      const { containers: _pc, ...processorPod } = processor.spec.template.spec;
      const { containers: _wc, ...workerPod } = worker.spec.template.spec;
      expect(processorPod).toEqual(workerPod);
      expect(processor.spec.selector.matchLabels).toEqual({ 'app.kubernetes.io/name': 'trawl', 'app.kubernetes.io/component': 'processor' });
      expect(processor.spec.template.metadata.labels).toMatchObject(processor.spec.selector.matchLabels);
    });

    const scaled = overlay === 'overlays/example' ? ['trawl-worker', 'trawl-processor', 'trawl-renderer'] : ['trawl-worker', 'trawl-processor'];
    it.each(scaled)('scales %s with exactly one autoscaler, slowly down and never past the grace period', (target) => {
      const autoscalers = objects.filter((o) => (o.kind === 'ScaledObject' || o.kind === 'HorizontalPodAutoscaler') && o.spec.scaleTargetRef.name === target);
      expect(autoscalers).toHaveLength(1);
      const [scaler] = autoscalers as [K8sObject];
      expect(scaler.metadata.name).toBe(target);
      const behavior = scaler.kind === 'ScaledObject' ? scaler.spec.advanced.horizontalPodAutoscalerConfig.behavior : scaler.spec.behavior;
      expect(behavior.scaleDown.stabilizationWindowSeconds).toBeGreaterThanOrEqual(300);
      expect(behavior.scaleDown.policies).toEqual([{ type: 'Pods', value: 2, periodSeconds: 60 }]);
      const [min, max] = scaler.kind === 'ScaledObject' ? [scaler.spec.minReplicaCount, scaler.spec.maxReplicaCount] : [scaler.spec.minReplicas, scaler.spec.maxReplicas];
      // Workers always run; processors and renderers may scale to none (KEDA) while the workers process and render their own pages.
      expect(min).toBeGreaterThanOrEqual(target === 'trawl-worker' || scaler.kind === 'HorizontalPodAutoscaler' ? 1 : 0);
      expect(max).toBeGreaterThan(min);
    });

    it('has an autoscaler for nothing but the workers, processors and (KEDA) renderers', () => {
      const targets = objects.filter((o) => o.kind === 'ScaledObject' || o.kind === 'HorizontalPodAutoscaler').map((o) => o.spec.scaleTargetRef.name).sort();
      expect(targets).toEqual([...scaled].sort());
      // Each scales a Deployment that is there (kustomize renders an autoscaler whose target is missing).
      for (const target of targets) expect(find(objects, 'Deployment', target).spec.template.spec.containers[0].args).toEqual(['worker']);
    });
  });

  it('scales on a series the dashboard really exports, below one worker\'s concurrency', () => {
    const objects = render('overlays/example');
    const so = find(objects, 'ScaledObject', 'trawl-worker');
    const [trigger] = so.spec.triggers;
    expect(trigger.type).toBe('prometheus');
    expect(trigger.metadata.query).toBe('max(sum by (instance) (trawl_hosts{role="dashboard", state=~"ready|in_flight"}))');
    const exported = readFileSync(join(REPO, 'apps/dashboard/src/metrics.ts'), 'utf8');
    expect(exported).toContain("role: 'dashboard'");
    expect(exported).toContain("gauge('trawl_hosts',");
    expect(exported).toContain("{ state: 'ready' }");
    expect(exported).toContain("{ state: 'in_flight' }");
    const config = objects.find((o) => o.kind === 'ConfigMap') as K8sObject;
    expect(Number(trigger.metadata.threshold)).toBeLessThanOrEqual(Number(config.data.TRAWL_CONCURRENCY));
    expect(so.spec.fallback.replicas).toBeGreaterThanOrEqual(so.spec.minReplicaCount);
  });

  it('scales the processors on the process backlog the dashboard exports, below one processor\'s concurrency', () => {
    const objects = render('overlays/example');
    const so = find(objects, 'ScaledObject', 'trawl-processor');
    const [trigger] = so.spec.triggers;
    expect(trigger.type).toBe('prometheus');
    expect(trigger.metadata.query).toBe('max(trawl_process_backlog_pages{role="dashboard"})');
    expect(readFileSync(join(REPO, 'apps/dashboard/src/metrics.ts'), 'utf8')).toContain("gauge('trawl_process_backlog_pages',");
    // One processor works on TRAWL_PROCESS_CONCURRENCY pages at once (the config's default unless the ConfigMap sets it).
    const config = objects.find((o) => o.kind === 'ConfigMap') as K8sObject;
    const schema = readFileSync(join(REPO, 'libs/config/src/schema.ts'), 'utf8');
    const concurrency = Number(config.data.TRAWL_PROCESS_CONCURRENCY ?? /default\((\d+)\), 'TRAWL_PROCESS_CONCURRENCY'/.exec(schema)?.[1]);
    expect(concurrency).toBeGreaterThan(0);
    expect(Number(trigger.metadata.threshold)).toBeLessThanOrEqual(concurrency);
    expect(so.spec.minReplicaCount).toBe(0);
    expect(trigger.metadata.activationThreshold).toBe('0');
    expect(so.spec.fallback.replicas).toBeGreaterThanOrEqual(1);
    // Both autoscalers ask the same Prometheus, the one the overlay names.
    expect(trigger.metadata.serverAddress).toBe(find(objects, 'ScaledObject', 'trawl-worker').spec.triggers[0].metadata.serverAddress);
    expect(trigger.metadata.serverAddress).toBe('http://prometheus-operated.monitoring.svc:9090');
  });

  it('scales the renderers from zero on the render jobs the dashboard exports, woken by pages left unrendered for want of one', () => {
    const objects = render('overlays/example');
    const so = find(objects, 'ScaledObject', 'trawl-renderer');
    const [trigger] = so.spec.triggers;
    expect(trigger.type).toBe('prometheus');
    expect(trigger.metadata.query).toBe(
      'max(sum by (instance) (trawl_queue_jobs{role="dashboard", queue="render", state=~"waiting|delayed|active"})) + (max(rate(trawl_crawl_events_total{role="dashboard", event="renderNoWorker"}[2m])) or vector(0))',
    );
    // The series are the dashboard's; the render queue is among its queues, renderNoWorker a counter the fetch stage adds.
    const exported = readFileSync(join(REPO, 'apps/dashboard/src/metrics.ts'), 'utf8');
    expect(exported).toContain("gauge('trawl_queue_jobs',");
    expect(exported).toContain("gauge('trawl_crawl_events_total',");
    expect(readFileSync(join(REPO, 'libs/queue/src/registry.ts'), 'utf8')).toContain('{ name: RENDER_QUEUE,');
    expect(readFileSync(join(REPO, 'libs/crawl/src/fetch/render-hand-over.ts'), 'utf8')).toContain("counters.add('renderNoWorker')");
    // A renderer holds 2 × TRAWL_RENDER_CONCURRENCY jobs at once: the threshold leaves it slots spare.
    const config = objects.find((o) => o.kind === 'ConfigMap') as K8sObject;
    const schema = readFileSync(join(REPO, 'libs/config/src/schema.ts'), 'utf8');
    const pages = Number(config.data.TRAWL_RENDER_CONCURRENCY ?? /default\((\d+)\), 'TRAWL_RENDER_CONCURRENCY'/.exec(schema)?.[1]);
    expect(pages).toBeGreaterThan(0);
    expect(Number(trigger.metadata.threshold)).toBeLessThanOrEqual(2 * pages);
    expect(so.spec.minReplicaCount).toBe(0);
    expect(trigger.metadata.activationThreshold).toBe('0');
    expect(so.spec.fallback.replicas).toBeGreaterThanOrEqual(1);
    // The autoscaler owns the count: the base's replicas: 0 is dropped.
    expect(find(objects, 'Deployment', 'trawl-renderer').spec.replicas).toBeUndefined();
    expect(trigger.metadata.serverAddress).toBe(find(objects, 'ScaledObject', 'trawl-worker').spec.triggers[0].metadata.serverAddress);
  });
});

// The Kubernetes manifests (deploy/), rendered by `kubectl kustomize` as `kubectl apply -k` and Argo CD render
// them: each overlay and the Argo CD objects. Every object is checked against Kubernetes' own schemas
// (kubernetes-models: Kubernetes' OpenAPI schemas, compiled; @kubernetes-models/argo-cd: Argo CD's CRDs), and a
// Kubernetes object may hold no field its API does not know (the API server's strict field validation refuses
// them; @kubernetes/client-node's models, generated from the same OpenAPI, list each kind's fields). Then what the
// manifests promise: the security contexts, the probes, a termination grace that covers the server's drain, the
// migrations before the Deployments, settings the server accepts, and a network policy whose "public internet"
// is what the server's SSRF check calls public. Needs kubectl (with its kustomize).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { Application, AppProject } from '@kubernetes-models/argo-cd/argoproj.io/v1alpha1';
import { BEYOND_THE_REGISTRIES, blockRange, ENGINE_STOP_TIMEOUT_MS, IPV4_SPECIAL_PURPOSE, IPV6_SPECIAL_PURPOSE, loadConfig } from '@platform/server/testing';
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { Job } from 'kubernetes-models/batch/v1';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Namespace, Service, ServiceAccount } from 'kubernetes-models/v1';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';

const deploy = join(import.meta.dirname, '..', '..', 'deploy');
const OVERLAYS = ['small', 'ha'] as const;

/** A rendered object; its fields are checked against the schemas below. */
type Obj = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; annotations?: Record<string, string> }; spec?: any; data?: any };

function render(path: string): Obj[] {
  const result = spawnSync('kubectl', ['kustomize', join(deploy, path)], { encoding: 'utf8' });
  if (result.error) throw new Error(`kubectl is needed to render the manifests: ${result.error.message}`);
  if (result.status !== 0) throw new Error(`kubectl kustomize ${path}: ${result.stderr}`);
  return parseAllDocuments(result.stdout).map((document) => document.toJSON() as Obj);
}

const MODELS: Record<string, { new (data: never): { validate(): void } }> = {
  'v1/Namespace': Namespace,
  'v1/ServiceAccount': ServiceAccount,
  'v1/ConfigMap': ConfigMap,
  'v1/Service': Service,
  'apps/v1/Deployment': Deployment,
  'batch/v1/Job': Job,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'argoproj.io/v1alpha1/Application': Application,
  'argoproj.io/v1alpha1/AppProject': AppProject,
};

type Attribute = { baseName: string; type: string };
const models = k8s as unknown as Record<string, { getAttributeTypeMap?: () => Attribute[] }>;
const LEAVES = new Set(['string', 'number', 'boolean', 'any', 'Date', 'IntOrString', 'object']);

/** The fields of `value` that its type (a @kubernetes/client-node model name) does not have, as paths. */
function unknownFields(value: unknown, type: string, path: string): string[] {
  if (value === null || value === undefined || LEAVES.has(type)) return [];
  const array = /^Array<(.+)>$/.exec(type);
  if (array) return (value as unknown[]).flatMap((item, index) => unknownFields(item, array[1]!, `${path}[${index}]`));
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map) return Object.entries(value as object).flatMap(([key, item]) => unknownFields(item, map[1]!, `${path}.${key}`));
  const attributes = models[type]?.getAttributeTypeMap?.();
  if (!attributes) throw new Error(`no model ${type} in @kubernetes/client-node (at ${path})`);
  return Object.entries(value as object).flatMap(([key, item]) => {
    const attribute = attributes.find((each) => each.baseName === key);
    return attribute ? unknownFields(item, attribute.type, `${path}.${key}`) : [`${path}.${key}`];
  });
}

/** `apps/v1` Deployment → V1Deployment, `autoscaling/v2` HorizontalPodAutoscaler → V2HorizontalPodAutoscaler. */
const modelName = ({ apiVersion, kind }: Obj) => `${apiVersion.split('/').at(-1)!.replace(/^v/, 'V')}${kind}`;

function checkSchemas(objects: Obj[]): void {
  expect(objects.length).toBeGreaterThan(0);
  for (const object of objects) {
    const where = `${object.kind} ${object.metadata.name}`;
    const Model = MODELS[`${object.apiVersion}/${object.kind}`];
    if (!Model) throw new Error(`${where}: no schema for ${object.apiVersion} ${object.kind} in this test (add its model)`);
    expect(() => new Model(object as never).validate(), where).not.toThrow();
    if (!object.apiVersion.startsWith('argoproj.io/')) expect(unknownFields(object, modelName(object), object.kind), where).toEqual([]);
  }
}

const byKind = (objects: Obj[], kind: string) => objects.filter((object) => object.kind === kind);
const named = (objects: Obj[], kind: string, name: string) => {
  const found = objects.find((object) => object.kind === kind && object.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name}`);
  return found;
};
const wave = (object: Obj) => object.metadata.annotations?.['argocd.argoproj.io/sync-wave'] ?? '0';

const scratch = mkdtempSync(join(tmpdir(), 'platform-manifests-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The server's configuration from a pod's settings, with stand-ins for what the Secrets hold. */
function serverConfig(objects: Obj[]) {
  const settings = byKind(objects, 'ConfigMap')[0]!.data as Record<string, string>;
  const kubeconfig = join(scratch, 'kubeconfig');
  writeFileSync(kubeconfig, 'apiVersion: v1\nkind: Config\n');
  return {
    settings,
    config: loadConfig({
      ...settings,
      DATABASE_URL: 'postgres://platform@postgres.example.com:5432/platform',
      SECRETS_KEY: Buffer.alloc(32, 1).toString('base64'),
      HCLOUD_TOKEN: 'a-token',
      // Where the Secret is mounted in the pods.
      ...(settings.MANAGEMENT_KUBECONFIG === '/etc/platform/management/kubeconfig' ? { MANAGEMENT_KUBECONFIG: kubeconfig } : {}),
    }),
  };
}

describe.each(OVERLAYS)('deploy/overlays/%s', (overlay) => {
  const objects = render(`overlays/${overlay}`);
  const api = named(objects, 'Deployment', 'platform-api');
  const worker = named(objects, 'Deployment', 'platform-worker');
  const migrate = named(objects, 'Job', 'platform-migrate');
  const pods = [api, worker, migrate];

  it('renders objects that Kubernetes accepts', () => {
    checkSchemas(objects);
    expect(new Set(objects.map((object) => object.metadata.namespace ?? (object.kind === 'Namespace' ? object.metadata.name : undefined)))).toEqual(
      new Set(['platform']),
    );
  });

  it('names its Secrets and holds none', () => {
    expect(byKind(objects, 'Secret')).toEqual([]);
    for (const pod of pods) {
      const spec = pod.spec.template.spec;
      expect(spec.containers[0].envFrom).toContainEqual({ secretRef: { name: 'platform-api' } });
      expect(spec.volumes).toContainEqual(expect.objectContaining({ secret: expect.objectContaining({ secretName: 'platform-api-management-kubeconfig' }) }));
    }
  });

  it('runs every pod unprivileged, read-only, as the image user, with no service account token', () => {
    const serviceAccount = named(objects, 'ServiceAccount', 'platform-api') as Obj & { automountServiceAccountToken?: boolean };
    expect(serviceAccount.automountServiceAccountToken).toBe(false);
    expect(named(objects, 'Namespace', 'platform').metadata).toMatchObject({ labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } });
    const images = new Set<string>();
    for (const pod of pods) {
      const spec = pod.spec.template.spec;
      expect(spec, pod.metadata.name).toMatchObject({
        serviceAccountName: 'platform-api',
        automountServiceAccountToken: false,
        securityContext: { runAsNonRoot: true, runAsUser: 10001, seccompProfile: { type: 'RuntimeDefault' } },
      });
      expect(spec.containers).toHaveLength(1);
      const [container] = spec.containers;
      expect(container.securityContext, pod.metadata.name).toEqual({
        readOnlyRootFilesystem: true,
        allowPrivilegeEscalation: false,
        privileged: false,
        capabilities: { drop: ['ALL'] },
      });
      const tmp = container.volumeMounts.find((mount: { mountPath: string }) => mount.mountPath === '/tmp');
      expect(spec.volumes.find((volume: { name: string }) => volume.name === tmp?.name)).toHaveProperty('emptyDir');
      images.add(container.image);
    }
    expect(images.size).toBe(1);
  });

  it('gives each process its role and probes the API on /readyz and /healthz', () => {
    const [apiContainer] = api.spec.template.spec.containers;
    expect(apiContainer.args).toEqual(['--role', 'api']);
    expect(worker.spec.template.spec.containers[0].args).toEqual(['--role', 'worker']);
    expect(migrate.spec.template.spec.containers[0].args).toEqual(['migrate']);
    expect(apiContainer.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect(apiContainer.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(apiContainer.ports).toContainEqual({ name: 'http', containerPort: 8080 });
    const service = named(objects, 'Service', 'platform-api');
    expect(service.spec.ports[0].targetPort).toBe('http');
    // The port the probes and the Service name is the one the image's server listens on.
    const { settings, config } = serverConfig(objects);
    expect(settings.PORT ?? '8080').toBe('8080');
    // The readiness check answers within the probe's timeout, saying what did not answer.
    expect(config.readyTimeoutMs).toBeLessThan(apiContainer.readinessProbe.timeoutSeconds * 1000);
  });

  it('gives each pod the time its drain takes before it is killed', () => {
    const { config } = serverConfig(objects);
    const apiSpec = api.spec.template.spec;
    const preStop = apiSpec.containers[0].lifecycle.preStop.sleep.seconds;
    // main.ts on SIGTERM: requests in flight (SHUTDOWN_GRACE_MS), then the workflow engine's stop.
    expect(apiSpec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(preStop + (config.shutdownGraceMs + ENGINE_STOP_TIMEOUT_MS) / 1000);
    // A worker: the webhook attempts in flight (their timeout and 1 s, jobs/webhook-dispatcher.ts), then the engine.
    expect(worker.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual((config.webhooks.timeoutMs + 1000 + ENGINE_STOP_TIMEOUT_MS) / 1000);
  });

  it('runs the migrations before the Deployments change, under Argo CD', () => {
    expect(migrate.metadata.annotations).toMatchObject({ 'argocd.argoproj.io/hook': 'Sync', 'argocd.argoproj.io/hook-delete-policy': 'BeforeHookCreation' });
    for (const deployment of byKind(objects, 'Deployment')) expect(Number(wave(deployment))).toBeGreaterThan(Number(wave(migrate)));
    // What the Job needs is there before it.
    for (const kind of ['Namespace', 'ServiceAccount', 'ConfigMap']) expect(Number(wave(byKind(objects, kind)[0]!)), kind).toBeLessThan(Number(wave(migrate)));
    expect(migrate.spec.template.spec.restartPolicy).toBe('Never');
  });

  it('has settings the server accepts, naming the installation the same from every pod', () => {
    const { settings, config } = serverConfig(objects);
    expect(config.compute.provider).toBe('hetzner');
    expect(config.clusterDriver.kind).toBe('kubernetes');
    expect(config.seedDemo).toBe(false);
    // Otherwise each pod names the installation after its own host name, and the leftovers reconciler of one
    // pod does not know the servers another made.
    expect(settings.PUBLIC_URL || settings.HCLOUD_MANAGED_BY).toBeTruthy();
  });

  it('lets the pods reach the public internet as the SSRF check defines it', () => {
    const egress = named(objects, 'NetworkPolicy', 'platform-api-egress').spec.egress as { to?: { ipBlock?: { cidr: string; except: string[] } }[] }[];
    const blocks = egress.flatMap((rule) => rule.to ?? []).flatMap((peer) => (peer.ipBlock ? [peer.ipBlock] : []));
    expect(blocks.map((block) => block.cidr)).toEqual(['0.0.0.0/0', '::/0']);
    // Every block the SSRF check refuses (but those that carry an IPv4 address, judged by it), less the ones
    // inside another.
    const refused = [...IPV4_SPECIAL_PURPOSE, ...IPV6_SPECIAL_PURPOSE, ...BEYOND_THE_REGISTRIES]
      .filter((block) => block.globallyReachable !== true && !block.carriesIpv4)
      .map((block) => ({ prefix: block.prefix, ...blockRange(block.prefix) }));
    const outermost = refused.filter(
      (inner) =>
        !refused.some(
          (outer) =>
            outer !== inner &&
            outer.family === inner.family &&
            outer.first <= inner.first &&
            inner.last <= outer.last &&
            outer.last - outer.first > inner.last - inner.first,
        ),
    );
    for (const [index, family] of [4, 6].entries()) {
      expect(blocks[index]!.except.toSorted()).toEqual(
        outermost
          .filter((block) => block.family === family)
          .map((block) => block.prefix)
          .toSorted(),
      );
    }
    const ingress = named(objects, 'NetworkPolicy', 'platform-api-ingress').spec;
    expect(ingress.ingress).toEqual([{ ports: [{ port: 'http' }] }]);
  });
});

describe('the overlays differ in size', () => {
  it('small: one API and one worker, no autoscaler', () => {
    const objects = render('overlays/small');
    expect(named(objects, 'Deployment', 'platform-api').spec.replicas).toBe(1);
    expect(named(objects, 'Deployment', 'platform-worker').spec.replicas).toBe(1);
    expect(byKind(objects, 'HorizontalPodAutoscaler')).toEqual([]);
  });

  it('ha: at least 3 API processes on the autoscaler, which alone sets their number, 2 workers, spread over nodes', () => {
    const objects = render('overlays/ha');
    const api = named(objects, 'Deployment', 'platform-api');
    expect(api.spec.replicas).toBeUndefined();
    expect(named(objects, 'HorizontalPodAutoscaler', 'platform-api').spec).toMatchObject({
      minReplicas: 3,
      scaleTargetRef: { kind: 'Deployment', name: 'platform-api' },
    });
    expect(named(objects, 'Deployment', 'platform-worker').spec.replicas).toBe(2);
    for (const deployment of byKind(objects, 'Deployment')) {
      expect(deployment.spec.template.spec.topologySpreadConstraints).toContainEqual(
        expect.objectContaining({ topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'DoNotSchedule' }),
      );
    }
    for (const budget of byKind(objects, 'PodDisruptionBudget')) expect(budget.spec.maxUnavailable).toBe(1);
  });
});

describe('deploy/argocd', () => {
  it('deploys the ha overlay into its namespace, from a repository its project allows', () => {
    const objects = render('argocd');
    checkSchemas(objects);
    const application = named(objects, 'Application', 'platform');
    const project = named(objects, 'AppProject', application.spec.project);
    expect(application.spec.source.path).toBe('deploy/overlays/ha');
    expect(project.spec.sourceRepos).toContain(application.spec.source.repoURL);
    expect(project.spec.destinations).toContainEqual(application.spec.destination);
    const deployed = render('overlays/ha');
    expect(application.spec.destination.namespace).toBe(named(deployed, 'Namespace', 'platform').metadata.name);
    expect(application.spec.source.kustomize.images).toEqual([expect.stringMatching(/^platform-api=.+@sha256:[0-9a-f]{64}$/)]);
    // The autoscaler's replicas are not a difference to undo.
    expect(application.spec.ignoreDifferences).toContainEqual({ group: 'apps', kind: 'Deployment', name: 'platform-api', jsonPointers: ['/spec/replicas'] });
  });
});

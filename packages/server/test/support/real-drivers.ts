// The world both real drivers talk to, for a test file that runs the server with them: COMPUTE_PROVIDER=hetzner
// against the Hetzner fake, CLUSTER_DRIVER=kubernetes against a management cluster (where Kamaji and Argo CD keep
// their objects) and a tenant cluster, each a test Kubernetes API server. Started before the file's tests and
// closed after them; the test plays (or runs) Kamaji, Argo CD and the kubelets on top.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { type HetznerFake, startHetznerFake } from './hetzner-fake.ts';
import { KubeApiServer } from './kube-api-server.ts';

export const KAMAJI_NS = 'kamaji-tenants';
export const ARGO_NS = 'argocd';

export class RealDriverWorld {
  fake!: HetznerFake;
  management!: KubeApiServer;
  tenant!: KubeApiServer;
  dir!: string;
  private readonly tokens: readonly [string, ...string[]];
  constructor(tokens: readonly [string, ...string[]]) {
    this.tokens = tokens;
  }

  /** The server's settings for both real drivers pointed at this world. */
  env(): Record<string, string> {
    return {
      COMPUTE_PROVIDER: 'hetzner',
      HCLOUD_TOKEN: this.tokens[0],
      HCLOUD_ENDPOINT: this.fake.url,
      HCLOUD_REQUESTS_PER_HOUR: '3600000',
      PROVIDER_RATE_LIMIT: '1000',
      CLUSTER_DRIVER: 'kubernetes',
      MANAGEMENT_KUBECONFIG: join(this.dir, 'management.kubeconfig'),
      ARGOCD_NAMESPACE: ARGO_NS,
      KAMAJI_NAMESPACE: KAMAJI_NS,
      LOG_POLL_MS: '20',
    };
  }
}

/**
 * Call before `useTestServer`, whose start-up reads `env()`. `tokens`: the Hetzner projects' API tokens, the first
 * the platform's own; `fake`: how fast its Actions and servers move.
 */
export function useRealDriverWorld(options: { tokens: [string, ...string[]]; fake?: { actionMs?: number; startingMs?: number } }): RealDriverWorld {
  const world = new RealDriverWorld(options.tokens);
  beforeAll(async () => {
    [world.fake, world.management, world.tenant] = await Promise.all([
      startHetznerFake({ requestsPerHour: 3_600_000, ...options.fake }),
      new KubeApiServer().start(),
      new KubeApiServer().start(),
    ]);
    for (const token of options.tokens) world.fake.addToken(token);
    world.dir = await mkdtemp(join(tmpdir(), 'real-drivers-'));
    await writeFile(join(world.dir, 'management.kubeconfig'), world.management.kubeconfig());
  });
  afterAll(async () => {
    await world.fake?.close();
    await world.management?.close();
    await world.tenant?.close();
    if (world.dir) await rm(world.dir, { recursive: true, force: true });
  });
  return world;
}

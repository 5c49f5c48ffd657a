// The composition root of the providers: which implementation runs is decided here, from configuration, and
// nowhere else (services and workflows see only the interfaces). The simulated cloud is the default of both.
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import { HetznerCompute } from './hetzner/compute.ts';
import { tokenRateLimit } from './hetzner/rate-limit.ts';
import { SimulatedCloud } from './simulated.ts';
import type { ClusterDriver, ComputeProvider } from './types.ts';

// Generic over the database's tables: the providers keep tables of their own and read none of ours.
export interface ComputeProviderDeps<DB> {
  db: Kysely<DB>;
  logger: Logger;
  /** The simulated cloud the process runs anyway (it is also the default cluster driver). */
  simulated: SimulatedCloud<DB>;
}

/** The configured compute provider (COMPUTE_PROVIDER): the simulated cloud, or Hetzner Cloud. */
export function createComputeProvider<DB>(config: Pick<Config, 'compute'>, deps: ComputeProviderDeps<DB>): ComputeProvider {
  const { compute } = config;
  if (compute.provider === 'simulated') return deps.simulated;
  if (compute.hcloudSshKeys.length === 0) {
    deps.logger.warn('HCLOUD_SSH_KEYS is not set: servers are created without SSH keys (Hetzner e-mails a root password) and their firewall keeps SSH closed');
  }
  return new HetznerCompute({
    endpoint: compute.hcloudEndpoint,
    token: compute.hcloudToken,
    sshKeys: compute.hcloudSshKeys,
    managedBy: compute.hcloudManagedBy,
    rateLimit: tokenRateLimit(deps.db, compute.hcloudRequestsPerHour),
    actionPollMs: compute.hcloudPollIntervalMs,
    logger: deps.logger.child({ provider: 'hetzner' }),
  });
}

export interface ClusterDriverDeps<DB> {
  db: Kysely<DB>;
  clock: Clock;
  /** The simulated cloud to share (one simulation for machines and clusters); default: a new one. */
  simulated?: SimulatedCloud<DB>;
}

/** The configured cluster driver (CLUSTER_DRIVER); a management kubeconfig that cannot be used stops start-up. */
export async function createClusterDriver<DB>(config: Pick<Config, 'clusterDriver' | 'simulation'>, deps: ClusterDriverDeps<DB>): Promise<ClusterDriver> {
  const settings = config.clusterDriver;
  if (settings.kind === 'simulated') return deps.simulated ?? new SimulatedCloud(deps.db, deps.clock, config.simulation);
  // Loaded only when chosen: the Kubernetes client and models take seconds to import, on every process start.
  const { kubernetesDriver } = await import('./kubernetes/driver.ts');
  return kubernetesDriver(settings);
}

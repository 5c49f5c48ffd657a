// The composition root of the providers: which implementation runs is decided here, from configuration, and
// nowhere else (services and workflows see only the interfaces). The simulated cloud is the default of both.
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { Database } from '../db/schema.ts';
import { HetznerCompute } from './hetzner/compute.ts';
import { tokenRateLimit } from './hetzner/rate-limit.ts';
import { SimulatedCloud } from './simulated.ts';
import type { ClusterDriver, ComputeProvider } from './types.ts';

export interface ComputeProviderDeps {
  db: Kysely<Database>;
  logger: Logger;
  /** The simulated cloud the process runs anyway (it is also the default cluster driver). */
  simulated: SimulatedCloud;
}

/** The configured compute provider (COMPUTE_PROVIDER): the simulated cloud, or Hetzner Cloud. */
export function createComputeProvider(config: Pick<Config, 'compute'>, deps: ComputeProviderDeps): ComputeProvider {
  const { compute } = config;
  if (compute.provider === 'simulated') return deps.simulated;
  return new HetznerCompute({
    endpoint: compute.hcloudEndpoint,
    token: compute.hcloudToken,
    rateLimit: tokenRateLimit(deps.db, compute.hcloudRequestsPerHour),
    logger: deps.logger.child({ provider: 'hetzner' }),
  });
}

export interface ClusterDriverDeps {
  db: Kysely<Database>;
  clock: Clock;
  /** The simulated cloud to share (one simulation for machines and clusters); default: a new one. */
  simulated?: SimulatedCloud;
}

/** The configured cluster driver (CLUSTER_DRIVER); a management kubeconfig that cannot be used stops start-up. */
export async function createClusterDriver(config: Pick<Config, 'clusterDriver' | 'simulation'>, deps: ClusterDriverDeps): Promise<ClusterDriver> {
  const settings = config.clusterDriver;
  if (settings.kind === 'simulated') return deps.simulated ?? new SimulatedCloud(deps.db, deps.clock, config.simulation);
  // Loaded only when chosen: the Kubernetes client and models take seconds to import, on every process start.
  const { kubernetesDriver } = await import('./kubernetes/driver.ts');
  return kubernetesDriver(settings);
}

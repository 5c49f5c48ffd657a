// The composition root of the providers: which implementation runs is decided here, from configuration, and
// nowhere else (services and workflows see only the interfaces).
import type { Kysely } from 'kysely';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { Database } from '../db/schema.ts';
import { SimulatedCloud } from './simulated.ts';
import type { ClusterDriver } from './types.ts';

export interface ClusterDriverDeps {
  db: Kysely<Database>;
  clock: Clock;
  /** The simulated cloud to share (one simulation for machines and clusters); default: a new one. */
  simulated?: SimulatedCloud;
}

/** The configured cluster driver; a management kubeconfig that cannot be used stops start-up (ConfigError). */
export async function createClusterDriver(config: Pick<Config, 'clusterDriver' | 'simulation'>, deps: ClusterDriverDeps): Promise<ClusterDriver> {
  const settings = config.clusterDriver;
  if (settings.kind === 'simulated') return deps.simulated ?? new SimulatedCloud(deps.db, deps.clock, config.simulation);
  // Loaded only when chosen: the Kubernetes client and models take seconds to import, on every process start.
  const { kubernetesDriver } = await import('./kubernetes/driver.ts');
  return kubernetesDriver(settings);
}

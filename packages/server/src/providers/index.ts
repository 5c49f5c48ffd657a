// The composition root of the providers: which implementation runs is decided here, from configuration, and
// nowhere else (services and workflows see only the interfaces).
import { KubeConfig } from '@kubernetes/client-node';
import type { Kysely } from 'kysely';
import type { Clock } from '../clock.ts';
import { type Config, ConfigError } from '../config.ts';
import type { Database } from '../db/schema.ts';
import { KubernetesDriver } from './kubernetes/driver.ts';
import { SimulatedCloud } from './simulated.ts';
import type { ClusterDriver } from './types.ts';

export interface ClusterDriverDeps {
  db: Kysely<Database>;
  clock: Clock;
  /** The simulated cloud to share (one simulation for machines and clusters); default: a new one. */
  simulated?: SimulatedCloud;
}

/** The configured cluster driver; a management kubeconfig that cannot be used stops start-up (ConfigError). */
export function createClusterDriver(config: Pick<Config, 'clusterDriver' | 'simulation'>, deps: ClusterDriverDeps): ClusterDriver {
  const settings = config.clusterDriver;
  if (settings.kind === 'simulated') return deps.simulated ?? new SimulatedCloud(deps.db, deps.clock, config.simulation);
  const management = new KubeConfig();
  try {
    management.loadFromFile(settings.kubeconfigPath);
  } catch (error) {
    throw new ConfigError(`MANAGEMENT_KUBECONFIG: "${settings.kubeconfigPath}" is not a kubeconfig (${(error as Error).message.split('\n')[0]})`);
  }
  if (!management.getCurrentCluster()) throw new ConfigError(`MANAGEMENT_KUBECONFIG: "${settings.kubeconfigPath}" has no current context with a cluster`);
  return new KubernetesDriver({ management, argocdNamespace: settings.argocdNamespace, kamajiNamespace: settings.kamajiNamespace });
}

// The one place that chooses the compute provider (COMPUTE_PROVIDER): the simulated cloud by default, or
// Hetzner Cloud. Services and workflows only see a ComputeProvider.
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { Database } from '../db/schema.ts';
import { HetznerCompute } from './hetzner/compute.ts';
import { tokenRateLimit } from './hetzner/rate-limit.ts';
import type { SimulatedCloud } from './simulated.ts';
import type { ComputeProvider } from './types.ts';

export interface ComputeProviderDeps {
  db: Kysely<Database>;
  logger: Logger;
  /** The simulated cloud the process runs anyway (it is also the cluster driver). */
  simulated: SimulatedCloud;
}

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

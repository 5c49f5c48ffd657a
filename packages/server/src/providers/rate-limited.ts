// Every call to the cloud provider's API first takes a slot of the shared rate limit
// (services/provider-rate-limit.ts), so all processes together stay under it.
import type { ProviderRateLimit } from '../services/provider-rate-limit.ts';
import type { ComputeProvider } from './types.ts';

export function rateLimited(provider: ComputeProvider, limit: ProviderRateLimit, key = 'compute-provider'): ComputeProvider {
  const limited = <A extends unknown[], R>(call: (...args: A) => Promise<R>) => async (...args: A): Promise<R> => {
    await limit.take(key);
    return call(...args);
  };
  return {
    offerings: limited(() => provider.offerings()),
    createServer: limited((request) => provider.createServer(request)),
    getServer: limited((id) => provider.getServer(id)),
    shutdownServer: limited((id) => provider.shutdownServer(id)),
    deleteServer: limited((id) => provider.deleteServer(id)),
    createSnapshot: limited((serverId, labels) => provider.createSnapshot(serverId, labels)),
    getSnapshot: limited((id) => provider.getSnapshot(id)),
    deleteSnapshot: limited((id) => provider.deleteSnapshot(id)),
  };
}

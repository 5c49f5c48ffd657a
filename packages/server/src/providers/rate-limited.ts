// Every call to the cloud provider's API first takes a slot of the shared rate limit
// (providers/rate-limit.ts), so all processes together stay under it.
import { timedWait } from '../telemetry/metrics.ts';
import type { ProviderRateLimit } from './rate-limit.ts';
import type { ComputeProvider } from './types.ts';

export function rateLimited(provider: ComputeProvider, limit: ProviderRateLimit, key = 'compute-provider'): ComputeProvider {
  const limited =
    <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      await timedWait(key, limit.take(key));
      return call(...args);
    };
  return {
    offerings: limited((credential) => provider.offerings(credential)),
    createServer: limited((request) => provider.createServer(request)),
    getServer: limited((id, credential) => provider.getServer(id, credential)),
    shutdownServer: limited((id, credential) => provider.shutdownServer(id, credential)),
    powerOnServer: limited((id, credential) => provider.powerOnServer(id, credential)),
    deleteServer: limited((id, credential) => provider.deleteServer(id, credential)),
    createSnapshot: limited((serverId, labels, credential) => provider.createSnapshot(serverId, labels, credential)),
    getSnapshot: limited((id, credential) => provider.getSnapshot(id, credential)),
    deleteSnapshot: limited((id, credential) => provider.deleteSnapshot(id, credential)),
    ...(provider.listLabelled ? { listLabelled: limited((credential) => provider.listLabelled!(credential)) } : {}),
    ...(provider.deleteFirewall ? { deleteFirewall: limited((id, credential) => provider.deleteFirewall!(id, credential)) } : {}),
    ...(provider.deleteClusterResources
      ? { deleteClusterResources: limited((clusterId, credential) => provider.deleteClusterResources!(clusterId, credential)) }
      : {}),
    ...(provider.deleteLoadBalancer ? { deleteLoadBalancer: limited((id, credential) => provider.deleteLoadBalancer!(id, credential)) } : {}),
    // No call to the provider: it tells what a cloud controller manager reaches the provider with.
    ...(provider.cloudControllerAccess ? { cloudControllerAccess: (credential) => provider.cloudControllerAccess!(credential) } : {}),
    ...(provider.refreshFirewall ? { refreshFirewall: limited((clusterId, credential) => provider.refreshFirewall!(clusterId, credential)) } : {}),
  };
}

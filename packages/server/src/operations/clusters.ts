import * as clusters from '../resources/clusters.ts';
import { listKaasVersions as kaasVersionsPage, releaseForNewCluster } from '../resources/kaas-versions.ts';
import { listRegions as regionsPage, requireRegion } from '../resources/regions.ts';
import { type Handler, staged } from './types.ts';

export const listClusters: Handler<'listClusters'> = async (input, { db }) => ({
  status: 200,
  body: await clusters.listClusters(db, input),
});

export const listRegions: Handler<'listRegions'> = async ({ query }, { db }) => ({
  status: 200,
  body: await regionsPage(db, query),
});

export const listKaasVersions: Handler<'listKaasVersions'> = async ({ query }, { db }) => ({
  status: 200,
  body: await kaasVersionsPage(db, query),
});

export const createCluster: Handler<'createCluster'> = async ({ body, workspace }, { db, clock, workflows }) => {
  const regionId = await requireRegion(db, body.region_id);
  const release = await releaseForNewCluster(db, body.kaas_version);
  return { status: 202, body: await clusters.createCluster(db, workspace, body, { regionId, release }, { now: clock.now(), workflows }) };
};

export const getCluster: Handler<'getCluster'> = async ({ params, caller }, { db }) => {
  return { status: 200, body: await clusters.getCluster(db, caller, params.clusterId) };
};

export const updateCluster: Handler<'updateCluster'> = async ({ params, body, caller }, { db }) => {
  return { status: 200, body: await clusters.renameCluster(db, caller, params.clusterId, body) };
};

/** Recorded in the audit log (x-audited in the contract), by the binding, before the answer is sent. */
export const getClusterKubeconfig: Handler<'getClusterKubeconfig'> = async ({ params, query, caller }, { db, driver }) => {
  const body = await clusters.clusterKubeconfig(db, driver, caller, params.clusterId, query.ttl_seconds ?? 3600);
  // Credentials: no cache, shared or private, may keep them.
  return { status: 200, body, headers: { 'Cache-Control': 'no-store, private', Pragma: 'no-cache' } };
};

export const deleteCluster = staged<'deleteCluster'>({
  change: async ({ params, caller }, { db }) => {
    await clusters.deleteCluster(db, caller, params.clusterId);
    return { status: 204, body: undefined };
  },
  // The control plane, the cluster's firewall and load balancers go once the record's deletion is committed; what the
  // driver or the provider fails to delete stays, labelled, to clean up (the leftovers reconciler deletes it).
  // The provider's deletions are not awaited: a spent provider rate limit may hold their deletion for a long while, and the
  // answer does not depend on it.
  // The cluster's workspace is where the binding checked the caller's role (admin): its BYOM projects may hold the
  // cluster's firewall and load balancers.
  after: async ({ params, roleWorkspaceId }, { db, driver, provider, secrets, logger }) => {
    void clusters
      .deleteClusterResources(db, provider, secrets, params.clusterId, roleWorkspaceId)
      .catch((error: unknown) =>
        logger.warn({ err: error, cluster: params.clusterId }, 'deleting the cluster’s firewall and load balancers failed; the leftovers run retries'),
      );
    await driver
      .deleteCluster(params.clusterId)
      .catch((error: unknown) => logger.warn({ err: error, cluster: params.clusterId }, 'deleting the control plane failed'));
  },
});

// Follows the control planes of the running clusters, now and then, in every worker process, without waiting for
// a user's call: what the cluster driver reports of each (Kamaji rolling it, upgrading it, rotating its certificate
// authority, asleep) becomes the cluster's status_message, and the driver keeps Argo CD's access to each current
// meanwhile (ClusterDriver.controlPlanes). Every write is idempotent, so workers running it at once only repeat
// each other. A driver that reports no control planes of its own accord (the simulated cloud) leaves it idle.
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../db/schema.ts';
import type { ClusterDriver, ControlPlane } from '../providers/types.ts';
import { runningClusters, setRunningClusterMessage } from '../resources/clusters.ts';

/** What a running cluster's status message says of its control plane's state. */
function messageOf(plane: ControlPlane | undefined): string | null {
  if (!plane) return 'The control plane is missing from the management cluster; the platform’s operators must restore it.';
  if (plane.status === 'RUNNING' || plane.status === 'UNAVAILABLE') return plane.message;
  if (plane.status === 'DELETING') return 'The control plane is being deleted in the management cluster.';
  return plane.message ?? `The control plane reports ${plane.status}.`;
}

export function controlPlaneWatch({ db, logger, driver, everyMs }: { db: Kysely<Database>; logger: Logger; driver: ClusterDriver; everyMs: number }) {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;

  async function sweep(): Promise<void> {
    if (!driver.controlPlanes) return;
    // Listed before the clusters are read: a cluster that began to run meanwhile waits for the next sweep.
    const planes = new Map((await driver.controlPlanes()).map((plane) => [plane.cluster_id, plane]));
    for (const cluster of await runningClusters(db)) {
      const message = messageOf(planes.get(cluster.id));
      if (message !== cluster.status_message) {
        await setRunningClusterMessage(db, cluster.id, message);
        logger.info({ cluster: cluster.id, message }, 'cluster status message follows its control plane');
      }
    }
  }

  /** One sweep at a time: a slow one (its requests bounded by the driver's deadline) is not overtaken by the next. */
  const run = () => {
    running ??= sweep()
      .catch((error: unknown) => logger.warn({ err: error }, 'following the control planes failed; retrying on the next run'))
      .finally(() => {
        running = undefined;
      });
    return running;
  };

  return {
    sweep: run,
    start(): void {
      if (!driver.controlPlanes) return;
      void run();
      timer = setInterval(() => void run(), everyMs);
    },
    stop(): void {
      if (timer) clearInterval(timer);
    },
  };
}

// Deletes what this installation of the platform made at the cloud provider and nothing stands behind any more: a
// server labelled with a `machine` that no longer exists (created just before a crash, its machine deleted
// meanwhile), a snapshot that no live suspension holds, a load balancer made for a cluster that was deleted (one its
// cloud controller manager made, claimed for it while it targeted the cluster's servers), the firewall of a cluster
// that was deleted (once no server has it: Hetzner refuses deleting a firewall still applied, so it goes on a later
// run, after its servers). Only what
// carries the installation's managed-by label is looked at (`listLabelled`): a user's own servers in a BYOM project,
// whatever their labels, are never touched. It looks in the platform's account and in each active BYOM credential's
// project, now and then, in every worker process. A server or snapshot is deleted only once it has been a leftover
// for the grace period, counted from when this process first saw it (so a creation whose record is being written is
// never taken for one), a load balancer too; a firewall needs none (it is made only for a cluster that exists, and the clusters are read
// after the listing). The firewalls of live clusters get their rules brought up to date. With dry-run on, it only
// logs. Deletes are idempotent, so workers sweeping at once only repeat each other.
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Clock } from '../clock.ts';
import type { Database } from '../db/schema.ts';
import { labelValue } from '../providers/labels.ts';
import { type ComputeProvider, type LabelledResource, type ProviderCredential, ProviderError } from '../providers/types.ts';
import { activeCredentials } from '../resources/cloud-credentials.ts';
import { clusterIds } from '../resources/clusters.ts';
import { machineProviderIds } from '../resources/machines.ts';
import { heldSnapshotIds } from '../resources/suspensions.ts';
import type { SecretBox } from '../services/secrets.ts';

export interface LeftoversOptions {
  db: Kysely<Database>;
  clock: Clock;
  logger: Logger;
  provider: ComputeProvider;
  /** Opens BYOM credentials; without it only the platform's account is swept. */
  secrets?: SecretBox;
  /** Seconds a leftover is seen before it is deleted. */
  graceSeconds: number;
  /** Log what would be deleted, delete nothing. */
  dryRun: boolean;
  /** How often (real ms) it runs. */
  everyMs: number;
}

/** The accounts to sweep: the platform's (no credential), and each active BYOM cloud credential's. */
async function accounts(db: Kysely<Database>, secrets: SecretBox | undefined): Promise<{ name: string; credential?: ProviderCredential }[]> {
  const platform = { name: 'the platform account' };
  if (!secrets) return [platform];
  return [platform, ...(await activeCredentials(db, secrets)).map((credential) => ({ name: `cloud credential ${credential.id}`, credential }))];
}

interface Owners {
  machines: Set<string>;
  snapshots: Set<string>;
  clusters: Set<string>;
}

/** What stands behind labelled resources: the machines and clusters (by their label values), the snapshots live suspensions hold. */
async function owners(db: Kysely<Database>): Promise<Owners> {
  const [machines, snapshots, clusters] = await Promise.all([machineProviderIds(db), heldSnapshotIds(db), clusterIds(db)]);
  return { machines: new Set(machines.map(labelValue)), snapshots: new Set(snapshots), clusters: new Set(clusters.map(labelValue)) };
}

function isLeftover(resource: LabelledResource, behind: Owners): boolean {
  if (resource.kind === 'server') return !behind.machines.has(resource.labels.machine ?? '');
  if (resource.kind === 'snapshot') return !behind.snapshots.has(resource.id);
  return !behind.clusters.has(resource.labels.cluster ?? '');
}

export function leftoversReconciler(options: LeftoversOptions) {
  const { db, clock, logger, provider, graceSeconds, dryRun } = options;
  /** When this process first saw each leftover (clock seconds), by account, kind and id. */
  const firstSeen = new Map<string, number>();
  let timer: NodeJS.Timeout | undefined;

  async function sweepAccount(account: { name: string; credential?: ProviderCredential }, seen: Set<string>): Promise<void> {
    const found = await provider.listLabelled!(account.credential);
    // Read after the listing: a machine, suspension or cluster recorded meanwhile is seen, never the other way round.
    const behind = await owners(db);
    // Servers first: a deleted cluster's firewall can go only once no server has it.
    const order = { server: 0, snapshot: 1, load_balancer: 2, firewall: 3 };
    for (const resource of [...found].sort((a, b) => order[a.kind] - order[b.kind])) {
      if (!isLeftover(resource, behind)) {
        if (resource.kind === 'firewall' && !dryRun && resource.labels.cluster) {
          // One firewall that cannot be refreshed must not stop the sweep of the account's other resources.
          await provider
            .refreshFirewall?.(resource.labels.cluster, account.credential)
            .catch((error: unknown) => logger.warn({ err: error, firewall: resource.id }, 'refreshing a cluster firewall failed'));
        }
        continue;
      }
      const key = `${account.name}:${resource.kind}:${resource.id}`;
      seen.add(key);
      const since = firstSeen.get(key) ?? clock.now();
      firstSeen.set(key, since);
      if (resource.kind !== 'firewall' && clock.now() - since < graceSeconds) continue;
      const fields = { account: account.name, kind: resource.kind, id: resource.id, labels: resource.labels, leftover_for_s: clock.now() - since };
      if (dryRun) {
        logger.info(fields, 'leftover found; not deleted (dry run)');
        continue;
      }
      if (resource.kind === 'server') await provider.deleteServer(resource.id, account.credential);
      else if (resource.kind === 'snapshot') await provider.deleteSnapshot(resource.id, account.credential);
      else if (resource.kind === 'load_balancer') await provider.deleteLoadBalancer!(resource.id, account.credential);
      else {
        try {
          await provider.deleteFirewall!(resource.id, account.credential);
        } catch (error) {
          // Still applied to a server (Hetzner's resource_in_use): that server is a leftover too, or on its way out.
          if (!(error instanceof ProviderError && error.kind === 'busy')) throw error;
          logger.info({ ...fields, reason: error.message }, 'leftover firewall still in use; deleted on a later run');
          continue;
        }
      }
      firstSeen.delete(key);
      logger.warn(fields, `leftover ${resource.kind} deleted`);
    }
  }

  /** One sweep of every account; an account whose listing or deletion fails is tried again on the next. */
  async function sweep(): Promise<void> {
    if (!provider.listLabelled) return;
    const seen = new Set<string>();
    for (const account of await accounts(db, options.secrets)) {
      try {
        await sweepAccount(account, seen);
      } catch (error) {
        logger.warn({ err: error, account: account.name }, 'looking for leftovers failed; retrying on the next run');
        for (const key of firstSeen.keys()) if (key.startsWith(`${account.name}:`)) seen.add(key); // not seen, not cleared either
      }
    }
    // What is no leftover any more (deleted, or owned again) starts afresh if it ever is one again.
    for (const key of firstSeen.keys()) if (!seen.has(key)) firstSeen.delete(key);
  }

  return {
    sweep,
    start(): void {
      void sweep().catch((error: unknown) => logger.warn({ err: error }, 'looking for leftovers failed'));
      timer = setInterval(() => void sweep().catch((error: unknown) => logger.warn({ err: error }, 'looking for leftovers failed')), options.everyMs);
    },
    stop(): void {
      if (timer) clearInterval(timer);
    },
  };
}

// Deletes what the platform made at the cloud provider and nothing stands behind any more: a server labelled with a
// `machine` that no longer exists (created just before a crash, its machine deleted meanwhile), a snapshot that no
// live suspension holds. It looks in the platform's account and in each active BYOM credential's project, now and
// then, in every worker process. A leftover is deleted only once it has been one for the grace period, counted from
// when this process first saw it (so a creation whose record is being written is never taken for one); with
// dry-run on it is only logged. Deletes are idempotent, so workers sweeping at once only repeat each other.
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Clock } from '../clock.ts';
import type { Database } from '../db/schema.ts';
import { labelValue } from '../providers/labels.ts';
import type { ComputeProvider, LabelledResource, ProviderCredential } from '../providers/types.ts';
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
  const rows = await db.selectFrom('cloud_credentials').select(['id', 'secret_ciphertext']).where('is_active', '=', true).execute();
  return [platform, ...rows.map((row) => ({ name: `cloud credential ${row.id}`, credential: { id: row.id, token: secrets.open(row.secret_ciphertext) } }))];
}

/** What stands behind labelled resources: the machines (by their label value) and the snapshots live suspensions hold. */
async function owners(db: Kysely<Database>): Promise<{ machines: Set<string>; snapshots: Set<string> }> {
  const machines = await db.selectFrom('machines').select('provider_id').execute();
  const held = await db.selectFrom('suspensions').select('snapshot_id').where('snapshot_id', 'is not', null).where('status', '!=', 'resumed').execute();
  return { machines: new Set(machines.map((m) => labelValue(m.provider_id))), snapshots: new Set(held.map((s) => s.snapshot_id!)) };
}

const isLeftover = (resource: LabelledResource, behind: { machines: Set<string>; snapshots: Set<string> }) =>
  resource.kind === 'server' ? !behind.machines.has(resource.labels.machine ?? '') : !behind.snapshots.has(resource.id);

export function leftoversReconciler(options: LeftoversOptions) {
  const { db, clock, logger, provider, graceSeconds, dryRun } = options;
  /** When this process first saw each leftover (clock seconds), by account, kind and id. */
  const firstSeen = new Map<string, number>();
  let timer: NodeJS.Timeout | undefined;

  async function sweepAccount(account: { name: string; credential?: ProviderCredential }, seen: Set<string>): Promise<void> {
    const found = await provider.listLabelled!(account.credential);
    // Read after the listing: a machine or suspension recorded meanwhile is seen, never the other way round.
    const behind = await owners(db);
    for (const resource of found) {
      if (!isLeftover(resource, behind)) continue;
      const key = `${account.name}:${resource.kind}:${resource.id}`;
      seen.add(key);
      const since = firstSeen.get(key) ?? clock.now();
      firstSeen.set(key, since);
      if (clock.now() - since < graceSeconds) continue;
      const fields = { account: account.name, kind: resource.kind, id: resource.id, labels: resource.labels, leftover_for_s: clock.now() - since };
      if (dryRun) {
        logger.info(fields, 'leftover found; not deleted (dry run)');
        continue;
      }
      if (resource.kind === 'server') await provider.deleteServer(resource.id, account.credential);
      else await provider.deleteSnapshot(resource.id, account.credential);
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

// Webhook endpoints: URLs of a workspace that receive its events (see webhook-deliveries.ts for the sending). The
// only writer of `webhook_endpoints`. The signing secret is sealed at rest and shown only by the creation or
// rotation that made it; after a rotation the previous secret keeps signing until its deadline. The URL is
// checked against the SSRF rules here and again at every connection. An endpoint failing in a row cools (its
// circuit open) until a probe succeeds; one failing for days is disabled with an event and a notification, and
// nothing is delivered to a disabled endpoint (its pending deliveries are cancelled).
import type { ReceivedBody, Schema } from '@platform/api-types';
import { type Kysely, sql } from 'kysely';
import type { Database, Row } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import { ApiError, notFound, validationError } from '../errors.ts';
import { newId } from '../ids.ts';
import { type PageInput, workspacePage } from '../services/lists.ts';
import type { SecretBox } from '../services/secrets.ts';
import { memberWorkspaces, type WorkspaceCaller, type WorkspaceRef } from '../services/tenancy.ts';
import { forbiddenWebhookUrl, newWebhookSecret, type WebhookUrlRules } from '../services/webhooks.ts';
import { recordEventAndNotify } from './events.ts';
import { cancelPendingDeliveries } from './webhook-deliveries.ts';

type Db = Kysely<Database>;
type Endpoint = Schema<'WebhookEndpoint'>;

/** Row → record, typed on both ends: a drift between the database and the contract fails the type check. */
const toWebhookEndpoint = (row: Row<'webhook_endpoints'>): Endpoint => ({
  id: row.id,
  workspace_id: row.workspace_id,
  url: row.url,
  event_types: row.event_types,
  description: row.description,
  enabled: row.enabled,
  disabled_reason: row.disabled_reason,
  failing_since: row.failing_since,
  delivery_state: row.cooling_until === null ? 'active' : 'cooling',
  consecutive_failures: row.consecutive_failures,
  cooling_until: row.cooling_until,
  previous_secret_expires_at: row.previous_secret_expires_at,
  created_at: row.created_at,
  updated_at: row.updated_at,
});

const DISABLED_BY_REQUEST = 'Disabled through the API.';

/** 422 naming `url` when the URL breaks the rules (its host is resolved: call it outside a transaction). */
export async function checkWebhookUrl(url: string, rules: WebhookUrlRules): Promise<void> {
  const reason = await forbiddenWebhookUrl(url, rules);
  if (reason) {
    throw validationError(
      'url',
      `The webhook URL ${reason}.`,
      rules.allowHttpLoopback
        ? 'Use an https:// URL with a public host name, or an http:// URL of a loopback address.'
        : 'Use an https:// URL with a public host name.',
    );
  }
}

export const listWebhookEndpoints = (db: Db, input: PageInput) => workspacePage(db, input, 'webhook_endpoints', toWebhookEndpoint);

async function visibleEndpoint(db: Db, caller: WorkspaceCaller, id: string): Promise<Row<'webhook_endpoints'>> {
  const row = await db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('id', '=', id)
    .where('workspace_id', 'in', memberWorkspaces(db, caller))
    .executeTakeFirst();
  if (!row) throw notFound('Webhook endpoint', id);
  return row;
}

export const getWebhookEndpoint = async (db: Db, caller: WorkspaceCaller, id: string): Promise<Endpoint> =>
  toWebhookEndpoint(await visibleEndpoint(db, caller, id));

/** A new endpoint (its `url` checked by checkWebhookUrl first), with its secret, shown this once. */
export async function createWebhookEndpoint(
  db: Db,
  workspace: WorkspaceRef,
  input: ReceivedBody<'createWebhookEndpoint'>,
  { now, secrets, perWorkspace }: { now: number; secrets: SecretBox; perWorkspace: number },
): Promise<Schema<'WebhookEndpointWithSecret'>> {
  // Under the workspace's row lock, so two creations at once cannot both take the last place.
  await db.selectFrom('workspaces').select('id').where('id', '=', workspace.id).forNoKeyUpdate().execute();
  const { count } = await db
    .selectFrom('webhook_endpoints')
    .select(sql<number>`count(*)::int`.as('count'))
    .where('workspace_id', '=', workspace.id)
    .executeTakeFirstOrThrow();
  if (count >= perWorkspace) {
    throw new ApiError(
      'quota_exceeded',
      `Workspace ${workspace.id} has ${count} webhook endpoints, the most allowed (WEBHOOK_ENDPOINTS_PER_WORKSPACE=${perWorkspace}).`,
      {
        suggestion:
          'Delete an endpoint no longer used (DELETE /v1/webhook_endpoints/{id}) or subscribe an existing one to more event types; the operator can raise WEBHOOK_ENDPOINTS_PER_WORKSPACE.',
        details: { limit: perWorkspace, usage: count },
      },
    );
  }
  const secret = newWebhookSecret();
  const row = await db
    .insertInto('webhook_endpoints')
    .values({
      id: newId('whe'),
      workspace_id: workspace.id,
      url: input.url,
      event_types: input.event_types,
      description: input.description,
      enabled: input.enabled,
      disabled_reason: input.enabled ? null : DISABLED_BY_REQUEST,
      secret_ciphertext: secrets.seal(secret),
      previous_secret_ciphertext: null,
      previous_secret_expires_at: null,
      failing_since: null,
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return { ...toWebhookEndpoint(row), secret };
}

/**
 * New fields (a new `url` checked by checkWebhookUrl first); disabling cancels the pending deliveries, enabling clears
 * the reason and the failing run (and cancels what was written in the instant of disabling).
 */
export async function updateWebhookEndpoint(
  db: Db,
  caller: WorkspaceCaller,
  id: string,
  input: Schema<'WebhookEndpointUpdate'>,
  { now }: { now: number },
): Promise<Endpoint> {
  const current = await visibleEndpoint(db, caller, id);
  const row = await inTransaction(db, async (trx) => {
    const updated = await trx
      .updateTable('webhook_endpoints')
      .set({
        ...(input.url === undefined ? {} : { url: input.url }),
        ...(input.event_types === undefined ? {} : { event_types: input.event_types }),
        ...(input.description === undefined ? {} : { description: input.description }),
        ...(input.enabled === undefined || input.enabled === current.enabled
          ? {}
          : input.enabled
            ? { enabled: true, disabled_reason: null, failing_since: null, consecutive_failures: 0, cooling_until: null }
            : { enabled: false, disabled_reason: DISABLED_BY_REQUEST }),
        updated_at: now,
      })
      .where('id', '=', current.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    if (!updated.enabled) await cancelPendingDeliveries(trx, updated.id, 'Cancelled: the endpoint was disabled.', now);
    // Enabled again: a delivery still pending was written while it was being disabled (an event committed in that
    // instant read it as enabled, after the disabling's cancellation had looked). Nothing written for a disabled
    // endpoint is sent, so it is cancelled too, like the ones the disabling found.
    else if (!current.enabled) await cancelPendingDeliveries(trx, updated.id, 'Cancelled: written as the endpoint was disabled.', now);
    return updated;
  });
  return toWebhookEndpoint(row);
}

export async function deleteWebhookEndpoint(db: Db, caller: WorkspaceCaller, id: string): Promise<void> {
  const endpoint = await visibleEndpoint(db, caller, id);
  // Its deliveries go with it (ON DELETE CASCADE); a job still queued for one finds nothing to send.
  await db.deleteFrom('webhook_endpoints').where('id', '=', endpoint.id).execute();
}

/** A new secret; the current one keeps signing for `overlap_seconds` (an older previous secret is dropped). */
export async function rotateWebhookEndpointSecret(
  db: Db,
  caller: WorkspaceCaller,
  id: string,
  input: ReceivedBody<'rotateWebhookEndpointSecret'>,
  { now, secrets }: { now: number; secrets: SecretBox },
): Promise<Schema<'WebhookEndpointWithSecret'>> {
  const current = await visibleEndpoint(db, caller, id);
  const overlap = input.overlap_seconds;
  const secret = newWebhookSecret();
  const row = await db
    .updateTable('webhook_endpoints')
    .set({
      secret_ciphertext: secrets.seal(secret),
      previous_secret_ciphertext: overlap > 0 ? current.secret_ciphertext : null,
      previous_secret_expires_at: overlap > 0 ? now + overlap : null,
      updated_at: now,
    })
    .where('id', '=', current.id)
    .returningAll()
    .executeTakeFirstOrThrow();
  return { ...toWebhookEndpoint(row), secret };
}

/**
 * Removes every endpoint of a workspace and, with them, their deliveries. The foreign key does it when the
 * workspace row is deleted; a deletion that keeps the row for a while (a grace period) calls this.
 */
export async function removeWorkspaceEndpoints(trx: Db, workspaceId: string): Promise<void> {
  await trx.deleteFrom('webhook_endpoints').where('workspace_id', '=', workspaceId).execute();
}

// What the dispatcher needs of an endpoint.

/**
 * The secrets that sign a delivery now, each as `open` makes it of the sealed secret (the dispatcher: its signing
 * key): the current one, and the previous one until its deadline.
 */
export function signingSecrets<T>(
  endpoint: Pick<Row<'webhook_endpoints'>, 'secret_ciphertext' | 'previous_secret_ciphertext' | 'previous_secret_expires_at'>,
  open: (sealed: Buffer) => T,
  now: number,
): T[] {
  const previous =
    endpoint.previous_secret_ciphertext && endpoint.previous_secret_expires_at !== null && endpoint.previous_secret_expires_at > now
      ? [open(endpoint.previous_secret_ciphertext)]
      : [];
  return [open(endpoint.secret_ciphertext), ...previous];
}

/** What one endpoint's attempts settled together came to, in the order they ended. */
export interface EndpointOutcomes {
  id: string;
  /** Whether any attempt succeeded. */
  succeeded: boolean;
  /** Failed attempts after the last success (all of them when none succeeded). */
  failures: number;
  /** The last failure's error. */
  error?: string;
}

/** The first cooling lasts this long (seconds); each failed probe doubles it, up to COOLING_MAX_SECONDS. */
const COOLING_SECONDS = 30;
const COOLING_MAX_SECONDS = 600;

/**
 * Records attempts' outcomes on their endpoints, in one statement: a success ends the failing run and closes the
 * circuit; failures count on, and `circuitFailures` of them in a row open it (the endpoint cools, then is
 * probed; a failed probe cools it again for twice as long). Returns the endpoints failing for
 * `disableAfterSeconds`, each with its last error, for disableFailingEndpoint.
 */
export async function recordEndpointOutcomes(
  db: Db,
  outcomes: readonly EndpointOutcomes[],
  { now, circuitFailures, disableAfterSeconds }: { now: number; circuitFailures: number; disableAfterSeconds: number },
): Promise<EndpointOutcomes[]> {
  if (outcomes.length === 0) return [];
  const failures = sql`(CASE WHEN v.succeeded THEN v.failures ELSE e.consecutive_failures + v.failures END)`;
  const { rows } = await sql<{ id: string; failing_since: number | null }>`
    UPDATE webhook_endpoints e
    SET consecutive_failures = ${failures},
      failing_since = CASE WHEN v.failures = 0 THEN NULL WHEN v.succeeded THEN ${now}::bigint ELSE coalesce(e.failing_since, ${now}) END,
      cooling_until = CASE WHEN ${failures} >= ${circuitFailures}
        THEN ${now}::bigint + least(${COOLING_MAX_SECONDS}, ${COOLING_SECONDS} * power(2, least(${failures} - ${circuitFailures}, 10)))::bigint END
    FROM jsonb_to_recordset(${JSON.stringify(outcomes)}::jsonb) AS v (id text, succeeded boolean, failures integer)
    WHERE e.id = v.id AND e.enabled
    RETURNING e.id, e.failing_since`.execute(db);
  const failingLong = new Set(rows.filter((row) => row.failing_since !== null && now - Number(row.failing_since) >= disableAfterSeconds).map((row) => row.id));
  return outcomes.filter((outcome) => failingLong.has(outcome.id));
}

/**
 * Disables an endpoint that failed every attempt for `days`, cancels its pending deliveries and tells it: an event
 * (sent to the workspace's other endpoints that subscribe to it) and a notification of the workspace's members.
 * Returns whether this call disabled it.
 */
export async function disableFailingEndpoint(db: Db, id: string, { now, days, error }: { now: number; days: number; error: string }): Promise<boolean> {
  return inTransaction(db, async (trx) => {
    const reason = `Every delivery failed for ${days} days (the last: ${error})`;
    const row = await trx
      .updateTable('webhook_endpoints')
      .set({ enabled: false, disabled_reason: reason, updated_at: now })
      .where('id', '=', id)
      .where('enabled', '=', true)
      .returningAll()
      .executeTakeFirst();
    if (!row) return false;
    await cancelPendingDeliveries(trx, id, 'Cancelled: the endpoint was disabled after failing for days.', now);
    const event = {
      type: 'webhook_endpoint.disabled',
      workspace_id: row.workspace_id,
      object_type: 'webhook_endpoint',
      object_id: id,
      object: toWebhookEndpoint(row),
    } as const;
    await recordEventAndNotify(trx, event, now, {
      title: 'Webhook endpoint disabled',
      body: `${row.url} failed every delivery for ${days} days and was disabled; nothing more is sent to it. Fix it, enable it again (PATCH /v1/webhook_endpoints/${id}), then redeliver what it missed.`,
      severity: 'warning',
    });
    return true;
  });
}

/** Enabled endpoints whose circuit is open (cooling, or waiting for their probe): what a metrics scrape reports. */
export async function countCoolingEndpoints(db: Kysely<Database>): Promise<number> {
  const { n } = await db
    .selectFrom('webhook_endpoints')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('enabled', '=', true)
    .where('cooling_until', 'is not', null)
    .executeTakeFirstOrThrow();
  return Number(n);
}

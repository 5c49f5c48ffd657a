// The audit log: the only writer of `audit_events`. The HTTP binding (http/audit.ts) records every request that
// changes something, in the transaction of its change (or on its own when it was refused), and the workflow
// engine records its transitions through the hook the composition root gives it (runtime.ts). An
// event holds ids only: never a body, a token, a secret or a password.
import type { Schema } from '@platform/api-types';
import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { Database, Row } from '../db/schema.ts';
import type { WorkflowTransition } from '../engine/engine.ts';
import { newId } from '../ids.ts';
import { afterCursor, type PageInput } from '../services/lists.ts';
import { decodeCursor, page } from '../services/pagination.ts';
import { looksSecret } from '../services/redaction.ts';
import { type WorkspaceCaller, withinRestriction } from '../services/tenancy.ts';

type Db = Kysely<Database>;
type AuditEvent = Schema<'AuditEvent'>;

const toAuditEvent = (row: Row<'audit_events'>): AuditEvent => ({
  id: row.id,
  created_at: row.created_at,
  actor_type: row.actor_type,
  actor_id: row.actor_id,
  token_kind: row.token_kind,
  token_id: row.token_id,
  workspace_id: row.workspace_id,
  operation: row.operation,
  target_ids: row.target_ids,
  request_id: row.request_id,
  outcome: row.outcome,
  status: row.status,
  error_code: row.error_code,
  client_address: row.client_address,
});

/** What a request's event says; the id and time are added here. */
export type RequestAuditInput = Pick<
  AuditEvent,
  'actor_id' | 'token_kind' | 'token_id' | 'workspace_id' | 'operation' | 'target_ids' | 'request_id' | 'outcome' | 'status' | 'error_code' | 'client_address'
>;

/**
 * Ids as this API makes them (`ins_01jd…`, a machine's `compute://mch_01jd…`). A path segment of another form (a
 * typo, or a token pasted where an id belongs) is left out of the event, so no secret reaches the log that way.
 */
const API_ID = /^(compute:\/\/)?[a-z]{2,8}_[0-9A-Za-z]{1,64}$/;

export const isAuditableId = (value: string): boolean => API_ID.test(value) && !looksSecret(value);

/** Records a request's event; call it in the transaction of the request's change. */
export async function recordRequestEvent(db: Db, event: RequestAuditInput, now: number): Promise<void> {
  const requestId = event.request_id !== null && looksSecret(event.request_id) ? null : event.request_id;
  await db
    .insertInto('audit_events')
    .values({
      ...event,
      id: newId('aud'),
      created_at: now,
      actor_type: 'user',
      target_ids: [...new Set(event.target_ids.filter(isAuditableId))],
      request_id: requestId,
    })
    .execute();
}

/**
 * Records a workflow's transition (actor: the platform); call it in the transaction that updates the workflow.
 * Its workspace is its subject's (a cluster, install, machine, suspension, or the product a template belongs
 * to), null once the subject is gone (an uninstall that finished).
 */
export async function recordWorkflowTransition(db: Db, transition: WorkflowTransition, now: number): Promise<void> {
  // A product's regeneration names its product in its checkpoints.
  const productId = typeof transition.state.product_id === 'string' ? transition.state.product_id : null;
  const { subjectId } = transition;
  const { rows } = await sql<{ workspace_id: string | null }>`
    SELECT COALESCE(
      (SELECT workspace_id FROM clusters WHERE id = ${subjectId}),
      (SELECT workspace_id FROM installs WHERE id = ${subjectId}),
      (SELECT c.workspace_id FROM machines m JOIN clusters c ON c.id = m.cluster_id WHERE m.provider_id = ${subjectId}),
      (SELECT workspace_id FROM suspensions WHERE id = ${subjectId}),
      (SELECT workspace_id FROM products WHERE id = ${productId})) AS workspace_id`.execute(db);
  await db
    .insertInto('audit_events')
    .values({
      id: newId('aud'),
      created_at: now,
      actor_type: 'platform',
      actor_id: null,
      token_kind: null,
      token_id: null,
      workspace_id: rows[0]?.workspace_id ?? null,
      operation: `workflow.${transition.kind}.${transition.status}`,
      target_ids: [transition.workflowId, subjectId, ...(productId ? [productId] : [])],
      request_id: null,
      outcome: transition.status === 'failed' ? 'failed' : 'succeeded',
      status: null,
      error_code: null,
      client_address: null,
    })
    .execute();
}

export interface AuditFilters {
  cursor?: string;
  limit: number;
  actor_id?: string;
  target_id?: string;
  operation?: string;
  since?: number;
  until?: number;
}

/** One page of the events `where` selects (within `also` when given), narrowed by the filters, oldest first. */
async function auditPage(db: Db, where: { column: 'workspace_id' | 'actor_id'; value: string; also?: RawBuilder<boolean> }, filters: AuditFilters) {
  const after = decodeCursor(filters.cursor, 'audit_events');
  let query = db.selectFrom('audit_events').selectAll().where(where.column, '=', where.value);
  if (where.also) query = query.where(where.also);
  if (filters.actor_id !== undefined) query = query.where('actor_id', '=', filters.actor_id);
  if (filters.target_id !== undefined) query = query.where(sql<boolean>`target_ids @> ARRAY[${filters.target_id}]::text[]`);
  if (filters.operation !== undefined) query = query.where('operation', '=', filters.operation);
  if (filters.since !== undefined) query = query.where('created_at', '>=', filters.since);
  if (filters.until !== undefined) query = query.where('created_at', '<', filters.until);
  return page(await afterCursor(query, 'audit_events', after, filters.limit).execute(), filters.limit, filters.cursor, toAuditEvent);
}

/** The audit log of the workspace named by X-Workspace-Id (or the caller's default one; an empty page without). */
export async function listWorkspaceAuditEvents(db: Db, input: PageInput & { query: AuditFilters }) {
  const { workspace } = input;
  if (!workspace) return page([], input.query.limit, input.query.cursor, toAuditEvent);
  return auditPage(db, { column: 'workspace_id', value: workspace.id }, input.query);
}

/**
 * The events the user is the actor of, in every workspace and outside workspaces; for a token restricted to
 * workspaces, only those in its workspaces.
 */
export const listUserAuditEvents = (db: Db, caller: WorkspaceCaller, filters: Omit<AuditFilters, 'actor_id'>) =>
  auditPage(db, { column: 'actor_id', value: caller.userId, also: withinRestriction(caller, 'audit_events.workspace_id') }, filters);

/** Deletes events created before `before` (Unix seconds); returns how many. */
export async function pruneAuditEvents(db: Db, before: number): Promise<number> {
  const result = await db.deleteFrom('audit_events').where('created_at', '<', before).executeTakeFirst();
  return Number(result.numDeletedRows);
}

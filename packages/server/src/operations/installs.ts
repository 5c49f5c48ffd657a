import type { Schema } from '@platform/api-types';
import { toInstall } from '../db/mappers.ts';
import { newId } from '../ids.ts';
import { notFound, validationError } from '../http/errors.ts';
import { requestHash, withIdempotencyKey } from '../services/idempotency.ts';
import { workspacePage } from '../services/lists.ts';
import { resolveWorkspace } from '../services/tenancy.ts';
import { visibleInstall } from '../services/visibility.ts';
import type { Kysely, Transaction } from 'kysely';
import type { Clock } from '../clock.ts';
import type { Database } from '../db/schema.ts';
import type { EventStream, Handler, OperationInput } from './types.ts';

/** Runs in the caller's transaction when there is one (an idempotent request), else in a new one. */
const inTransaction = <T>(db: Kysely<Database>, work: (trx: Transaction<Database>) => Promise<T>): Promise<T> =>
  db.isTransaction ? work(db as Transaction<Database>) : db.transaction().execute(work);

async function startInstall({ body, headers, caller }: OperationInput<'createInstall'>, db: Kysely<Database>, clock: Clock): Promise<Schema<'Install'>> {
  const workspace = await resolveWorkspace(db, caller.userId, headers['X-Workspace-Id']);
  const product = workspace
    ? await db.selectFrom('products').selectAll().where('id', '=', body.product_id).where('workspace_id', '=', workspace.id).executeTakeFirst()
    : undefined;
  if (!product) throw notFound('Product', body.product_id, 'product_id');
  const region = await db.selectFrom('regions').select('id').where('id', '=', body.region_id).executeTakeFirst();
  if (!region) throw notFound('Region', body.region_id, 'region_id');
  const overrides = body.overrides ?? [];
  const sourceIds = new Set(product.sources.map((s) => s.id));
  const seen = new Set<string>();
  overrides.forEach((override, i) => {
    const param = `overrides[${i}].template_helm_source_id`;
    if (!sourceIds.has(override.template_helm_source_id)) {
      throw validationError(param, `The product has no helm source ${override.template_helm_source_id}.`, "Use the id of one of the product's sources.");
    }
    if (seen.has(override.template_helm_source_id)) {
      throw validationError(param, `Helm source ${override.template_helm_source_id} is overridden twice.`, 'Merge the values into one override per source.');
    }
    seen.add(override.template_helm_source_id);
  });
  const now = clock.now();
  const row = await inTransaction(db, async (trx) => {
    const workflowId = newId('wf');
    const installId = newId('ins');
    await trx.insertInto('workflows').values({ id: workflowId, kind: 'install', subject_id: installId, status: 'pending', created_at: now, updated_at: now }).execute();
    return trx
      .insertInto('installs')
      .values({
        id: installId,
        workspace_id: product.workspace_id,
        product_id: product.id,
        region_id: region.id,
        cluster_id: null,
        status: 'pending',
        workflow_id: workflowId,
        overrides: JSON.stringify(overrides),
        status_message: null,
        created_at: now,
        updated_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
  });
  return toInstall(row);
}

export const createInstall: Handler<'createInstall'> = async (input, { db, clock }) => {
  const key = input.headers['idempotency-key'];
  if (key === undefined) return { status: 202, body: await startInstall(input, db, clock) };
  const hash = requestHash('createInstall', { body: input.body, workspace: input.headers['X-Workspace-Id'] ?? null });
  const { response, replayed } = await withIdempotencyKey(db, clock, { userId: input.caller.userId, key, operation: 'createInstall', hash }, async (trx) => ({
    status: 202 as const,
    body: await startInstall(input, trx, clock),
  }));
  return { status: 202, body: response.body, ...(replayed ? { headers: { 'Idempotent-Replayed': 'true' } } : {}) };
};

function sse(event: string, data: unknown, id?: string): string {
  return `${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

export const streamInstallLogs: Handler<'streamInstallLogs'> = async ({ params, headers, query, caller }, { db }) => {
  await resolveWorkspace(db, caller.userId, headers['X-Workspace-Id'], { onlyWhenNamed: true });
  await visibleInstall(db, caller.userId, params.id);
  const follow = query.follow ?? true;
  // The install's pods are run by the cluster driver, which the workflow workers bring; until an install
  // has been placed on a cluster there are no pods and so no lines: the backlog is empty.
  async function* events(): EventStream {
    yield sse('end', { reason: follow ? 'pods_gone' : 'backlog_sent' });
  }
  return { status: 200, stream: events() };
};

export const listInstalls: Handler<'listInstalls'> = async (input, { db }) => ({
  status: 200,
  body: await workspacePage(db, input, 'installs', toInstall),
});

export const getInstall: Handler<'getInstall'> = async ({ params, headers, caller }, { db }) => {
  await resolveWorkspace(db, caller.userId, headers['X-Workspace-Id'], { onlyWhenNamed: true });
  return { status: 200, body: toInstall(await visibleInstall(db, caller.userId, params.id)) };
};

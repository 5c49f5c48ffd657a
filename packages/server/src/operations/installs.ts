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
import { installLogStream, parseEventId } from '../services/logs.ts';
import { streamSlots } from '../services/stream-slots.ts';
import { callerKey, type Handler, type HandlerEnv, type OperationInput } from './types.ts';

/** Runs in the caller's transaction when there is one (an idempotent request), else in a new one. */
const inTransaction = <T>(db: Kysely<Database>, work: (trx: Transaction<Database>) => Promise<T>): Promise<T> =>
  db.isTransaction ? work(db as Transaction<Database>) : db.transaction().execute(work);

async function startInstall({ body, headers, caller }: OperationInput<'createInstall'>, db: Kysely<Database>, { clock, workflows }: Pick<HandlerEnv, 'clock' | 'workflows'>): Promise<Schema<'Install'>> {
  const workspace = await resolveWorkspace(db, caller, headers['X-Workspace-Id']);
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
    const installId = newId('ins');
    const workflowId = await workflows.start(trx, 'createInstall', installId);
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

export const createInstall: Handler<'createInstall'> = async (input, { db, clock, workflows }) => {
  const key = input.headers['idempotency-key'];
  if (key === undefined) return { status: 202, body: await startInstall(input, db, { clock, workflows }) };
  const hash = requestHash('createInstall', { body: input.body, workspace: input.headers['X-Workspace-Id'] ?? null });
  const { response, replayed } = await withIdempotencyKey(db, clock, { userId: input.caller.userId, key, operation: 'createInstall', hash }, async (trx) => ({
    status: 202 as const,
    body: await startInstall(input, trx, { clock, workflows }),
  }));
  return { status: 202, body: response.body, ...(replayed ? { headers: { 'Idempotent-Replayed': 'true' } } : {}) };
};

export const streamInstallLogs: Handler<'streamInstallLogs'> = async ({ params, headers, query, caller, signal }, { db, clock, driver, shutdown, logTails, config }) => {
  await resolveWorkspace(db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });
  const install = await visibleInstall(db, caller.userId, params.id);
  const lastEventId = headers['Last-Event-ID'];
  parseEventId(lastEventId); // a malformed id is a 422 before the stream starts
  const request = {
    installId: install.id,
    pod: query.pod,
    container: query.container,
    follow: query.follow ?? true,
    tail: query.tail,
    sinceSeconds: query.since_seconds ?? 0,
    lastEventId,
  };
  // A followed stream holds one of the caller's stream slots while it is open (a cap across every process);
  // over the cap, 429 before the stream starts. A slot a stream never released runs out with its lease.
  const slot = request.follow ? await streamSlots(db, clock).acquire(callerKey(caller), config.logStreamsPerToken) : undefined;
  async function* stream() {
    try {
      yield* installLogStream(request, { db, clock, driver, signal, shutdown, tails: logTails });
    } finally {
      await slot?.release();
    }
  }
  return { status: 200, stream: stream() };
};

export const listInstalls: Handler<'listInstalls'> = async (input, { db }) => ({
  status: 200,
  body: await workspacePage(db, input, 'installs', toInstall),
});

export const getInstall: Handler<'getInstall'> = async ({ params, headers, caller }, { db }) => {
  await resolveWorkspace(db, caller, headers['X-Workspace-Id'], { onlyWhenNamed: true });
  return { status: 200, body: toInstall(await visibleInstall(db, caller.userId, params.id)) };
};

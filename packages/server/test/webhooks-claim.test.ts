// The claim of due webhook deliveries (resources/webhook-deliveries.ts), below the dispatcher: a workspace at its
// share of the slots, however many deliveries its endpoints have waiting, neither delays another workspace's
// delivery nor has its own deliveries read and locked by every claim.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { recordEvent } from '../src/resources/events.ts';
import { cancelPendingDeliveries, claimDeliveries, redeliver, type Settled, settleDeliveries } from '../src/resources/webhook-deliveries.ts';
import { newUser, TestClock, useTestDatabase } from './support.ts';

const clock = new TestClock(Math.floor(Date.now() / 1000));
const context = useTestDatabase();

const QUOTA = { metric: 'kaas/clusters', type: 'allocation', displayName: 'Managed clusters', unit: 'count', limit: 3, usage: 3, remaining: 0 };

/** Endpoints of the workspace (on a receiver the claim never calls), written as the API writes them. */
async function endpoints(workspaceId: string, count: number): Promise<string[]> {
  const now = clock.now();
  const { rows } = await sql<{ id: string }>`
    INSERT INTO webhook_endpoints (id, workspace_id, url, event_types, description, enabled, secret_ciphertext, created_at, updated_at)
    SELECT 'whe_' || ${workspaceId} || '_' || n, ${workspaceId}, 'https://hooks.example/' || n, '{}', '', true, '\\x00'::bytea, ${now}, ${now}
    FROM generate_series(1, ${count}) n
    RETURNING id`.execute(context.db);
  return rows.map((row) => row.id);
}

describe('claiming due deliveries', () => {
  it('claims another workspace’s delivery in the next claim while workspaces at their share have thousands waiting, and reads none of theirs', async () => {
    const { db } = context;
    const slots = 16;
    const now = clock.now();
    // Three workspaces whose 4 endpoints each have 1,000 deliveries due, each already holding 4 slots (its share:
    // 16 ÷ (4 workspaces + 1), rounded up) with one attempt under way on every endpoint.
    const held = new Map<string, number>();
    const hanging: string[] = [];
    for (let w = 0; w < 3; w++) {
      const user = await newUser(db, clock, 'pro');
      held.set(user.workspaceId, 4);
      hanging.push(...(await endpoints(user.workspaceId, 4)));
    }
    await sql`
      WITH event AS (
        INSERT INTO events (id, type, workspace_id, object_type, object_id, object, created_at)
        SELECT 'evt_' || e.id || '_' || n, 'quota.reached', e.workspace_id, 'quota', 'kaas/clusters', ${JSON.stringify(QUOTA)}::jsonb, ${now}
        FROM webhook_endpoints e, generate_series(1, 1000) n WHERE e.id = ANY(${hanging})
        RETURNING id, workspace_id, substring(id FROM '^evt_(.*)_[0-9]+$') AS endpoint_id, (substring(id FROM '_([0-9]+)$'))::int AS n
      )
      INSERT INTO webhook_deliveries (id, endpoint_id, workspace_id, event_id, event_type, status, attempts, first_attempt_at, next_attempt_at,
        leased_until, lease_id, created_at, updated_at)
      SELECT 'whd_' || substr(id, 5), endpoint_id, workspace_id, id, 'quota.reached', 'pending', CASE WHEN n = 1 THEN 1 ELSE 0 END, ${now}, ${now},
        CASE WHEN n = 1 THEN now() + interval '1 minute' END, CASE WHEN n = 1 THEN gen_random_uuid() END, ${now}, ${now}
      FROM event`.execute(db);
    await sql`ANALYZE webhook_deliveries`.execute(db);

    const healthy = await newUser(db, clock, 'pro');
    const [endpointId] = await endpoints(healthy.workspaceId, 1);
    const eventId = await recordEvent(
      db,
      { type: 'quota.reached', workspace_id: healthy.workspaceId, object_type: 'quota', object_id: 'kaas/clusters', object: QUOTA as never },
      now,
    );

    // The claim's transaction is held open, so what it locked can be seen from another connection.
    const lockable = () =>
      sql<{ n: number }>`
        SELECT count(*)::int AS n FROM (
          SELECT 1 FROM webhook_deliveries WHERE endpoint_id = ANY(${hanging}) AND status = 'pending' AND leased_until IS NULL
          FOR UPDATE SKIP LOCKED) free`.execute(db);
    const { claimed, lockableMeanwhile } = await db.transaction().execute(async (trx) => {
      const claimed = await claimDeliveries(trx, { now, free: slots - 12, slots, held, endpointConcurrency: 4, leaseSeconds: 60 });
      return { claimed, lockableMeanwhile: (await lockable()).rows[0]!.n };
    });

    expect(claimed.map((delivery) => [delivery.endpoint_id, delivery.event_id, delivery.attempts])).toEqual([[endpointId, eventId, 1]]);
    expect(JSON.parse(claimed[0]!.event)).toMatchObject({ id: eventId, type: 'quota.reached', workspace_id: healthy.workspaceId, object: QUOTA });
    // Not one of the 11,988 waiting deliveries of the workspaces at their share was locked by the claim.
    expect(lockableMeanwhile).toBe(12 * 999);
  });

  it('counts an attempt that ended, waiting to be settled, in no endpoint’s room; but a cooling endpoint’s probe until its circuit is set', async () => {
    const { db } = context;
    const now = clock.now();
    const user = await newUser(db, clock, 'pro');
    const [endpointId] = await endpoints(user.workspaceId, 1);
    const event = { type: 'quota.reached', workspace_id: user.workspaceId, object_type: 'quota', object_id: 'kaas/clusters', object: QUOTA as never } as const;
    for (let i = 0; i < 3; i++) await recordEvent(db, event, now);
    const limits = { now, free: 8, slots: 8, held: new Map<string, number>(), endpointConcurrency: 1, leaseSeconds: 60 };
    const [first] = await claimDeliveries(db, limits);
    // Its attempt is under way: the endpoint has no room.
    expect(await claimDeliveries(db, limits)).toEqual([]);
    // It ended: the next is claimed while it waits to be settled, and it is not claimed again itself.
    const [second] = await claimDeliveries(db, { ...limits, ended: [first!.lease_id] });
    expect(second!.id).not.toBe(first!.id);
    expect(await claimDeliveries(db, { ...limits, ended: [first!.lease_id] })).toEqual([]);

    // Cooling and due for its probe: a probe that ended still holds the endpoint until it is settled.
    await sql`UPDATE webhook_endpoints SET cooling_until = ${now} WHERE id = ${endpointId}`.execute(db);
    expect(await claimDeliveries(db, { ...limits, ended: [first!.lease_id, second!.lease_id] })).toEqual([]);
  });

  it('shares the slots among the workspaces with work due or holding slots, not those whose deliveries wait for a later retry', async () => {
    const { db } = context;
    const now = clock.now();
    // Nothing of the tests before is pending.
    await sql`UPDATE webhook_deliveries SET status = 'succeeded', leased_until = NULL WHERE status = 'pending'`.execute(db);
    // Ten workspaces, each with a delivery whose next attempt is an hour away.
    for (let w = 0; w < 10; w++) {
      const user = await newUser(db, clock, 'pro');
      await endpoints(user.workspaceId, 1);
      await recordEvent(
        db,
        { type: 'quota.reached', workspace_id: user.workspaceId, object_type: 'quota', object_id: 'kaas/clusters', object: QUOTA as never },
        now + 3600,
      );
    }
    const user = await newUser(db, clock, 'pro');
    await endpoints(user.workspaceId, 1);
    for (let i = 0; i < 6; i++) {
      await recordEvent(
        db,
        { type: 'quota.reached', workspace_id: user.workspaceId, object_type: 'quota', object_id: 'kaas/clusters', object: QUOTA as never },
        now,
      );
    }
    // Alone with work due: 8 slots ÷ (1 + 1) = 4, which its endpoint's concurrency allows.
    const claimed = await claimDeliveries(db, { now, free: 8, slots: 8, held: new Map(), endpointConcurrency: 4, leaseSeconds: 60 });
    expect(claimed).toHaveLength(4);
  });

  it('settles only what its claim still holds: not a delivery claimed again since, cancelled or redelivered', async () => {
    const { db } = context;
    const now = clock.now();
    await sql`UPDATE webhook_deliveries SET status = 'succeeded', leased_until = NULL WHERE status = 'pending'`.execute(db);
    const user = await newUser(db, clock, 'pro');
    const [endpointId] = await endpoints(user.workspaceId, 1);
    const event = { type: 'quota.reached', workspace_id: user.workspaceId, object_type: 'quota', object_id: 'kaas/clusters', object: QUOTA as never } as const;
    // A lease of no seconds has run out by the next statement: its delivery is claimed again, as after a worker died.
    const claim = async () => {
      const [claimed] = await claimDeliveries(db, { now, free: 1, slots: 8, held: new Map(), endpointConcurrency: 1, leaseSeconds: 0 });
      return claimed!;
    };
    const succeeded = (delivery: { id: string; lease_id: string }): Settled => ({
      ...delivery,
      response_status: 204,
      duration_ms: 3,
      settlement: { status: 'succeeded' },
    });
    const row = async (id: string) =>
      (
        await sql<{ status: string; attempts: number; lease_id: string | null; last_response_status: number | null }>`
        SELECT status, attempts, lease_id, last_response_status FROM webhook_deliveries WHERE id = ${id}`.execute(db)
      ).rows[0];

    await recordEvent(db, event, now);
    const first = await claim();
    const again = await claim();
    expect(again.id).toBe(first.id);
    await settleDeliveries(db, [succeeded(first)], now);
    expect(await row(first.id)).toEqual({ status: 'pending', attempts: 2, lease_id: again.lease_id, last_response_status: null });
    await settleDeliveries(db, [succeeded(again)], now);
    expect(await row(first.id)).toEqual({ status: 'succeeded', attempts: 2, lease_id: again.lease_id, last_response_status: 204 });

    await recordEvent(db, event, now);
    const redelivered = await claim();
    await redeliver(db, { userId: user.userId, workspaceIds: null }, endpointId!, redelivered.id, now);
    await settleDeliveries(db, [succeeded(redelivered)], now);
    expect(await row(redelivered.id)).toEqual({ status: 'pending', attempts: 1, lease_id: null, last_response_status: null });

    const cancelled = await claim();
    expect(cancelled.id).toBe(redelivered.id);
    await cancelPendingDeliveries(db, endpointId!, 'Cancelled: the endpoint was disabled.', now);
    await settleDeliveries(db, [succeeded(cancelled)], now);
    expect(await row(cancelled.id)).toEqual({ status: 'cancelled', attempts: 2, lease_id: null, last_response_status: null });
  });
});

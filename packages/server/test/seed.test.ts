// The demo data a first start seeds, on the simulated cloud.
import { describe, expect, it } from 'vitest';
import { seedDemo } from '../src/db/seed.ts';
import { SimulatedCloud } from '../src/providers/simulated.ts';
import { TestClock, useTestDatabase } from './support.ts';

const database = useTestDatabase();
const clock = new TestClock();

describe('the demo', () => {
  it('has a ready machine whose server runs and whose node has joined its cluster, and a suspended one with a snapshot to resume from', async () => {
    const cloud = new SimulatedCloud(database.db, clock, { bootSeconds: 1, snapshotSeconds: 1 });
    expect(await seedDemo(database.db, clock, { provider: cloud, driver: cloud, simulatedCloud: true })).toBeDefined();
    const machine = await database.db.selectFrom('machines').selectAll().where('status', '=', 'ready').executeTakeFirstOrThrow();
    clock.advance(2);
    expect((await cloud.getServer(machine.server_id!))?.status).toBe('running');
    expect(await cloud.nodeReady(machine.cluster_id, machine.node_name)).toBe(true);
    // The suspended one can be resumed as the resume workflow does: a server from its snapshot, whose node is Ready.
    const suspension = await database.db.selectFrom('suspensions').selectAll().executeTakeFirstOrThrow();
    const suspended = await database.db.selectFrom('machines').selectAll().where('provider_id', '=', suspension.provider_id).executeTakeFirstOrThrow();
    expect(suspended.status).toBe('suspended');
    expect(await cloud.getSnapshot(suspension.snapshot_id!)).toMatchObject({ status: 'available' });
    expect(await cloud.nodeReady(suspended.cluster_id, suspended.node_name)).toBe(false);
    await cloud.createServer({
      name: suspended.node_name,
      server_type: suspended.server_type,
      location: 'fsn1',
      image: suspension.snapshot_id!,
      labels: { workflow: 'resume', machine: suspended.provider_id },
    });
    clock.advance(2);
    expect(await cloud.nodeReady(suspended.cluster_id, suspended.node_name)).toBe(true);
    // Its product is a chart that runs on a real cluster as it is: podinfo, whose image is where the chart says and
    // whose Service needs no load balancer (not a chart whose images moved away and whose Service is a load balancer).
    const product = await database.db.selectFrom('products').selectAll().executeTakeFirstOrThrow();
    expect(product.sources.map((source) => source.chart)).toEqual([
      { repo_url: 'https://stefanprodan.github.io/podinfo', target_revision: '6.7.1', chart: 'podinfo' },
    ]);
    // Seeded once: a database with a user is left as it is.
    expect(await seedDemo(database.db, clock, { provider: cloud, driver: cloud, simulatedCloud: true })).toBeUndefined();
  });
});

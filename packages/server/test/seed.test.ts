// The demo data a first start seeds, on the simulated cloud.
import { describe, expect, it } from 'vitest';
import { seedDemo } from '../src/db/seed.ts';
import { SimulatedCloud } from '../src/providers/simulated.ts';
import { TestClock, useTestDatabase } from './support.ts';

const database = useTestDatabase();
const clock = new TestClock();

describe('the demo', () => {
  it('has a ready machine whose server runs and whose node has joined its cluster (so a resume finds it Ready again)', async () => {
    const cloud = new SimulatedCloud(database.db, clock, { bootSeconds: 1 });
    expect(await seedDemo(database.db, clock, { provider: cloud, driver: cloud })).toBeDefined();
    const machine = await database.db.selectFrom('machines').selectAll().where('status', '=', 'ready').executeTakeFirstOrThrow();
    clock.advance(2);
    expect((await cloud.getServer(machine.server_id!))?.status).toBe('running');
    expect(await cloud.nodeReady(machine.cluster_id, machine.node_name)).toBe(true);
    // Seeded once: a database with a user is left as it is.
    expect(await seedDemo(database.db, clock, { provider: cloud, driver: cloud })).toBeUndefined();
  });
});

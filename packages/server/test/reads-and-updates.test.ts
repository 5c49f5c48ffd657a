// The reads of one machine, compute config and credential, the renames, credential rotation and the
// kubeconfig of a cluster, through the server and PostgreSQL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWorld, type World } from './fixtures.ts';
import { call, createTestDatabase, startTestServer, TestClock, type TestDatabase, type TestServer } from './support.ts';

let database: TestDatabase;
let server: TestServer;
let world: World;
const clock = new TestClock();

beforeAll(async () => {
  database = await createTestDatabase();
  server = await startTestServer(database.db, clock);
  world = await buildWorld(database.db, clock);
});
afterAll(async () => {
  await server?.close();
  await database?.drop();
});

describe('reads of one resource', () => {
  const paths = () => ({
    machine: `/v1/compute/machines/${encodeURIComponent(world.ids.machine)}`,
    computeConfig: `/v1/compute/configs/${world.ids.computeConfig}`,
    cloudCredential: `/v1/compute/cloud_credentials/${world.ids.cloudCredential}`,
    registryCredential: `/v1/registry/credentials/${world.ids.registryCredential}`,
  });

  it('answers the record to a member and 404 to anyone else', async () => {
    const expected = {
      machine: { provider_id: world.ids.machine, compute_config_id: world.ids.computeConfig },
      computeConfig: { id: world.ids.computeConfig, workspace_id: world.alice.workspaceId },
      cloudCredential: { id: world.ids.cloudCredential, workspace_id: world.alice.workspaceId },
      registryCredential: { id: world.ids.registryCredential, workspace_id: world.alice.workspaceId },
    };
    for (const [kind, path] of Object.entries(paths())) {
      const mine = await call(server.baseUrl, 'GET', path, { token: world.alice.token });
      expect(mine.status, path).toBe(200);
      expect(mine.body).toMatchObject(expected[kind as keyof typeof expected]);
      const foreign = await call(server.baseUrl, 'GET', path, { token: world.bob.token });
      expect(foreign.status, path).toBe(404);
      expect(foreign.body).toMatchObject({ error: { code: 'not_found' } });
    }
  });

  it('never answers a credential’s secret', async () => {
    const created = await call(server.baseUrl, 'POST', '/v1/registry/credentials', {
      token: world.alice.token,
      body: { name: 'hub', registry_url: 'ghcr.io', username: 'bot', password: 'pw-registry-secret-1' },
    });
    expect(created.status).toBe(201);
    const read = await call(server.baseUrl, 'GET', `/v1/registry/credentials/${created.body.id}`, { token: world.alice.token });
    expect(read.status).toBe(200);
    expect(JSON.stringify(read.body)).not.toContain('pw-registry-secret-1');
    expect(read.body).not.toHaveProperty('password');
    const cloud = await call(server.baseUrl, 'POST', '/v1/compute/cloud_credentials', {
      token: world.alice.token,
      body: { name: 'hz', provider: 'hcloud', secret: 'hc-cloud-secret-1' },
    });
    const cloudRead = await call(server.baseUrl, 'GET', `/v1/compute/cloud_credentials/${cloud.body.id}`, { token: world.alice.token });
    expect(cloudRead.status).toBe(200);
    expect(JSON.stringify(cloudRead.body)).not.toContain('hc-cloud-secret-1');
  });
});

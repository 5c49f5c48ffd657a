// The reads of one machine, compute config and credential, the renames, credential rotation and the
// kubeconfig of a cluster, through the server and PostgreSQL.
import { beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { secretBox } from '../src/services/secrets.ts';
import { buildWorld, type World } from './fixtures.ts';
import { call, serverLogger, useTestServer } from './support.ts';

let world: World;
/** What the server logs, one JSON object a line. */
const logLines: Record<string, unknown>[] = [];
const logger = serverLogger((line) => logLines.push(JSON.parse(line)));

const app = useTestServer({ parts: { logger } });
const { clock, secretsKey } = app;

beforeAll(async () => {
  world = await buildWorld(app.db, clock);
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
      const mine = await call(app.baseUrl, 'GET', path, { token: world.alice.token });
      expect(mine.status, path).toBe(200);
      expect(mine.body).toMatchObject(expected[kind as keyof typeof expected]);
      const foreign = await call(app.baseUrl, 'GET', path, { token: world.bob.token });
      expect(foreign.status, path).toBe(404);
      expect(foreign.body).toMatchObject({ error: { code: 'not_found' } });
    }
  });

  it('never answers a credential’s secret', async () => {
    const created = await call(app.baseUrl, 'POST', '/v1/registry/credentials', {
      token: world.alice.token,
      body: { name: 'hub', registry_url: 'ghcr.io', username: 'bot', password: 'pw-registry-secret-1' },
    });
    expect(created.status).toBe(201);
    const read = await call(app.baseUrl, 'GET', `/v1/registry/credentials/${created.body.id}`, { token: world.alice.token });
    expect(read.status).toBe(200);
    expect(JSON.stringify(read.body)).not.toContain('pw-registry-secret-1');
    expect(read.body).not.toHaveProperty('password');
    const cloud = await call(app.baseUrl, 'POST', '/v1/compute/cloud_credentials', {
      token: world.alice.token,
      body: { name: 'hz', provider: 'hcloud', secret: 'hc-cloud-secret-1' },
    });
    const cloudRead = await call(app.baseUrl, 'GET', `/v1/compute/cloud_credentials/${cloud.body.id}`, { token: world.alice.token });
    expect(cloudRead.status).toBe(200);
    expect(JSON.stringify(cloudRead.body)).not.toContain('hc-cloud-secret-1');
  });
});

describe('renames', () => {
  it('renames a workspace (name, icon, or both) and answers it as it is now', async () => {
    const path = `/v1/workspaces/${world.alice.workspaceId}`;
    const renamed = await call(app.baseUrl, 'PATCH', path, { token: world.alice.token, body: { name: 'Acme Staging', icon: '🧪' } });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ id: world.alice.workspaceId, name: 'Acme Staging', icon: '🧪' });
    const iconOnly = await call(app.baseUrl, 'PATCH', path, { token: world.alice.token, body: { icon: null } });
    expect(iconOnly.body).toMatchObject({ name: 'Acme Staging', icon: null });
    expect((await call(app.baseUrl, 'GET', path, { token: world.alice.token })).body).toMatchObject({ name: 'Acme Staging', icon: null });
    expect((await call(app.baseUrl, 'PATCH', path, { token: world.bob.token, body: { name: 'mine' } })).status).toBe(404);
  });

  it('refuses unknown fields and an empty change with 422', async () => {
    const unknown = await call(app.baseUrl, 'PATCH', `/v1/compute/configs/${world.ids.computeConfig}`, {
      token: world.alice.token,
      body: { name: 'x', provider: 'hcloud' },
    });
    expect(unknown.status).toBe(422);
    expect(unknown.body).toMatchObject({ error: { code: 'validation_error' } });
    const empty = await call(app.baseUrl, 'PATCH', `/v1/workspaces/${world.alice.workspaceId}`, { token: world.alice.token, body: {} });
    expect(empty.status).toBe(422);
    const clusterTypo = await call(app.baseUrl, 'PATCH', `/v1/clusters/${world.ids.cluster}`, { token: world.alice.token, body: { nmae: 'x' } });
    expect(clusterTypo.status).toBe(422);
  });

  it('renames a cluster; a name another cluster of the workspace has is 409 naming name', async () => {
    const other = await call(app.baseUrl, 'POST', '/v1/clusters', { token: world.alice.token, body: { name: 'taken-name', region_id: 'fsn1' } });
    expect(other.status).toBe(202);
    const taken = await call(app.baseUrl, 'PATCH', `/v1/clusters/${world.ids.cluster}`, { token: world.alice.token, body: { name: 'taken-name' } });
    expect(taken.status).toBe(409);
    expect(taken.body).toMatchObject({ error: { code: 'conflict', param: 'name' } });
    const renamed = await call(app.baseUrl, 'PATCH', `/v1/clusters/${world.ids.cluster}`, { token: world.alice.token, body: { name: 'prod-eu-2' } });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ id: world.ids.cluster, name: 'prod-eu-2' });
    // Its own name again is no conflict.
    expect((await call(app.baseUrl, 'PATCH', `/v1/clusters/${world.ids.cluster}`, { token: world.alice.token, body: { name: 'prod-eu-2' } })).status).toBe(200);
    expect((await call(app.baseUrl, 'PATCH', `/v1/clusters/${world.ids.cluster}`, { token: world.bob.token, body: { name: 'b' } })).status).toBe(404);
  });

  it('renames a compute config and keeps its provider settings', async () => {
    const before = await call(app.baseUrl, 'GET', `/v1/compute/configs/${world.ids.computeConfig}`, { token: world.alice.token });
    const renamed = await call(app.baseUrl, 'PATCH', `/v1/compute/configs/${world.ids.computeConfig}`, {
      token: world.alice.token,
      body: { name: 'general-purpose-eu' },
    });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toEqual({ ...before.body, name: 'general-purpose-eu' });
  });
});

describe('credential rotation', () => {
  const box = secretBox(secretsKey);

  it('a new registry password overwrites the stored one: the ciphertext changes and opens to the new password only', async () => {
    const created = await call(app.baseUrl, 'POST', '/v1/registry/credentials', {
      token: world.alice.token,
      body: { name: 'rotate-me', registry_url: 'ghcr.io', username: 'bot', password: 'old-registry-password' },
    });
    const stored = () => app.db.selectFrom('registry_credentials').selectAll().where('id', '=', created.body.id).executeTakeFirstOrThrow();
    const before = await stored();
    const rotated = await call(app.baseUrl, 'PATCH', `/v1/registry/credentials/${created.body.id}`, {
      token: world.alice.token,
      body: { password: 'new-registry-password', username: 'bot2', is_active: false },
    });
    expect(rotated.status).toBe(200);
    expect(rotated.body).toEqual({ ...created.body, is_active: false });
    expect(JSON.stringify(rotated.body)).not.toContain('registry-password');
    const after = await stored();
    expect(after.password_ciphertext?.equals(before.password_ciphertext as Buffer)).toBe(false);
    expect(box.open(after.password_ciphertext as Buffer)).toBe('new-registry-password');
    expect(after.username).toBe('bot2');
    const foreign = await call(app.baseUrl, 'PATCH', `/v1/registry/credentials/${created.body.id}`, { token: world.bob.token, body: { password: 'x' } });
    expect(foreign.status).toBe(404);
    expect(box.open((await stored()).password_ciphertext as Buffer)).toBe('new-registry-password');
  });

  it('a new cloud secret overwrites the stored one; an inactive credential makes no new configs nor machines', async () => {
    const created = await call(app.baseUrl, 'POST', '/v1/compute/cloud_credentials', {
      token: world.alice.token,
      body: { name: 'own', provider: 'hcloud', secret: 'old-cloud-secret' },
    });
    expect(created.body.is_active).toBe(true);
    const ciphertext = async () =>
      (await app.db.selectFrom('cloud_credentials').select('secret_ciphertext').where('id', '=', created.body.id).executeTakeFirstOrThrow()).secret_ciphertext;
    const before = await ciphertext();
    const rotated = await call(app.baseUrl, 'PATCH', `/v1/compute/cloud_credentials/${created.body.id}`, {
      token: world.alice.token,
      body: { secret: 'new-cloud-secret' },
    });
    expect(rotated.status).toBe(200);
    expect(rotated.body).toEqual(created.body);
    const after = await ciphertext();
    expect(after.equals(before)).toBe(false);
    expect(box.open(after)).toBe('new-cloud-secret');

    const providerConfig = { provider: 'hcloud', region: 'fsn1', image: 'ubuntu-24.04', machine_type_filter: 'cx2*' };
    const config = await call(app.baseUrl, 'POST', '/v1/compute/configs', {
      token: world.alice.token,
      body: { name: 'byom', provider: 'hcloud', provider_config: providerConfig, cloud_credential_id: created.body.id },
    });
    expect(config.status).toBe(201);
    const off = await call(app.baseUrl, 'PATCH', `/v1/compute/cloud_credentials/${created.body.id}`, {
      token: world.alice.token,
      body: { is_active: false },
    });
    expect(off.body.is_active).toBe(false);
    const newConfig = await call(app.baseUrl, 'POST', '/v1/compute/configs', {
      token: world.alice.token,
      body: { name: 'byom-2', provider: 'hcloud', provider_config: providerConfig, cloud_credential_id: created.body.id },
    });
    expect(newConfig.status).toBe(422);
    expect(newConfig.body).toMatchObject({ error: { code: 'validation_error', param: 'cloud_credential_id' } });
    const machine = () =>
      call(app.baseUrl, 'POST', '/v1/compute/machines', {
        token: world.alice.token,
        body: { cluster_id: world.ids.cluster, compute_config_id: config.body.id },
      });
    const refused = await machine();
    expect(refused.status).toBe(422);
    expect(refused.body).toMatchObject({ error: { code: 'validation_error', param: 'compute_config_id' } });
    await call(app.baseUrl, 'PATCH', `/v1/compute/cloud_credentials/${created.body.id}`, { token: world.alice.token, body: { is_active: true } });
    expect((await machine()).status).toBe(202);
  });
});

describe('kubeconfig of a cluster', () => {
  const path = () => `/v1/clusters/${world.ids.cluster}/kubeconfig`;

  it('gives the owner a kubeconfig with an expiring token, never cached, and records who took it in the audit log', async () => {
    const reply = await call(app.baseUrl, 'GET', `${path()}?ttl_seconds=900`, { token: world.alice.token, headers: { 'x-request-id': 'req-kubeconfig-1' } });
    expect(reply.status).toBe(200);
    expect(reply.headers.get('cache-control')).toBe('no-store, private');
    expect(reply.headers.get('pragma')).toBe('no-cache');
    expect(reply.body.cluster_id).toBe(world.ids.cluster);
    expect(reply.body.expires_at).toBe(clock.now() + 900);
    const config = parseYaml(reply.body.kubeconfig);
    expect(config).toMatchObject({ apiVersion: 'v1', kind: 'Config', clusters: [{ cluster: { server: expect.stringMatching(/^https:\/\//) } }] });
    const token: string = config.users[0].user.token;
    expect(token.length).toBeGreaterThanOrEqual(32);
    const again = await call(app.baseUrl, 'GET', path(), { token: world.alice.token });
    expect(parseYaml(again.body.kubeconfig).users[0].user.token).not.toBe(token);
    expect(again.body.expires_at).toBe(clock.now() + 3600);

    const audit = await app.db.selectFrom('audit_events').selectAll().where('request_id', '=', 'req-kubeconfig-1').execute();
    expect(audit).toMatchObject([{ operation: 'getClusterKubeconfig', actor_id: world.alice.userId, target_ids: [world.ids.cluster], token_kind: 'pat' }]);
    expect(JSON.stringify(audit)).not.toContain(token);
    expect(JSON.stringify(logLines)).not.toContain(token);
  });

  it('is for admins and the owner (x-required-role admin): 403 for a member, 200 for an admin, 404 for a stranger, 422 for a ttl out of bounds', async () => {
    const stranger = await call(app.baseUrl, 'GET', path(), { token: world.bob.token });
    expect(stranger.status).toBe(404);
    const member = await call(app.baseUrl, 'GET', path(), { token: world.members.member.token });
    expect(member.status).toBe(403);
    expect(member.body).toMatchObject({ error: { code: 'forbidden', details: { required_role: 'admin', role: 'member' } } });
    const admin = await call(app.baseUrl, 'GET', path(), { token: world.members.admin.token });
    expect(admin.status).toBe(200);
    const tooLong = await call(app.baseUrl, 'GET', `${path()}?ttl_seconds=999999`, { token: world.alice.token });
    expect(tooLong.status).toBe(422);
    expect(tooLong.body).toMatchObject({ error: { param: 'ttl_seconds' } });
  });

  it('is 409 while the cluster is not running', async () => {
    const created = await call(app.baseUrl, 'POST', '/v1/clusters', { token: world.alice.token, body: { name: 'still-provisioning', region_id: 'fsn1' } });
    const reply = await call(app.baseUrl, 'GET', `/v1/clusters/${created.body.id}/kubeconfig`, { token: world.alice.token });
    expect(reply.status).toBe(409);
    expect(reply.body).toMatchObject({ error: { code: 'conflict', details: { status: 'PROVISIONING' } } });
  });
});

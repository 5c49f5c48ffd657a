// Quotas hold under concurrency: the check and the insert share a transaction and a per-owner lock.
import { describe, expect, it } from 'vitest';
import { newId } from '../src/ids.ts';
import { call, newUser, useTestServer } from './support.ts';

const app = useTestServer();
const { clock } = app;

describe('kaas/clusters', () => {
  it('20 parallel creations by a free user: exactly one succeeds, nineteen get 403 quota_exceeded', async () => {
    const user = await newUser(app.db, clock, 'free');
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) => call(app.baseUrl, 'POST', '/v1/clusters', { token: user.token, body: { name: `race-${i}`, region_id: 'fsn1' } })),
    );
    const statuses = replies.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 202)).toHaveLength(1);
    expect(statuses.filter((s) => s === 403)).toHaveLength(19);
    for (const reply of replies.filter((r) => r.status === 403)) {
      expect(reply.body).toMatchObject({ error: { code: 'quota_exceeded', details: { metric: 'kaas/clusters', limit: 1, usage: 1, requested: 1 } } });
      // A cluster is no machine: BYOM does not help here; a free plan's way up is Pro.
      expect(reply.body.error.suggestion).toContain('plan to Pro');
      expect(reply.body.error.suggestion).not.toContain('BYOM');
    }
    const quota = await call(app.baseUrl, 'GET', '/v1/quotas/kaas%2Fclusters', { token: user.token });
    expect(quota.body).toMatchObject({ limit: 1, usage: 1, remaining: 0 });
  });

  it('a pro user at the limit is not told to upgrade to Pro', async () => {
    const user = await newUser(app.db, clock, 'pro');
    for (let i = 0; i < 3; i++) {
      expect((await call(app.baseUrl, 'POST', '/v1/clusters', { token: user.token, body: { name: `pro-${i}`, region_id: 'fsn1' } })).status).toBe(202);
    }
    const refused = await call(app.baseUrl, 'POST', '/v1/clusters', { token: user.token, body: { name: 'pro-3', region_id: 'fsn1' } });
    expect(refused.body.error).toMatchObject({ code: 'quota_exceeded', details: { metric: 'kaas/clusters', limit: 3 } });
    expect(refused.body.error.suggestion).not.toContain('Pro');
    expect(refused.body.error.suggestion).toContain('enterprise override');
  });

  it('counts per user across all owned workspaces: a new workspace adds no capacity', async () => {
    const user = await newUser(app.db, clock, 'free');
    expect((await call(app.baseUrl, 'POST', '/v1/clusters', { token: user.token, body: { name: 'one', region_id: 'fsn1' } })).status).toBe(202);
    const second = await call(app.baseUrl, 'POST', '/v1/workspaces', { token: user.token, body: { name: 'second' } });
    expect(second.status).toBe(201);
    const refused = await call(app.baseUrl, 'POST', '/v1/clusters', {
      token: user.token,
      body: { name: 'two', region_id: 'fsn1' },
      headers: { 'x-workspace-id': second.body.id },
    });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('quota_exceeded');
  });

  it('a workspace override wins over a user override, which wins over the plan', async () => {
    const user = await newUser(app.db, clock, 'free');
    await app.db.insertInto('quota_overrides').values({ user_id: user.userId, workspace_id: null, metric: 'kaas/clusters', limit: 2 }).execute();
    for (const name of ['a', 'b'])
      expect((await call(app.baseUrl, 'POST', '/v1/clusters', { token: user.token, body: { name, region_id: 'fsn1' } })).status).toBe(202);
    const refused = await call(app.baseUrl, 'POST', '/v1/clusters', { token: user.token, body: { name: 'c', region_id: 'fsn1' } });
    expect(refused.status).toBe(403);
    // The override sets the limit, so a free user's upgrade would not raise it: the suggestion names the override.
    expect(refused.body.error.suggestion).toBe('Delete a cluster you no longer need, or ask us to raise the enterprise override that sets this limit.');
    await app.db.insertInto('quota_overrides').values({ user_id: null, workspace_id: user.workspaceId, metric: 'kaas/clusters', limit: 3 }).execute();
    expect((await call(app.baseUrl, 'POST', '/v1/clusters', { token: user.token, body: { name: 'c', region_id: 'fsn1' } })).status).toBe(202);
  });
});

describe('compute quotas and concurrency', () => {
  async function clusterWithConfig(token: string, workspaceId: string, byom: boolean) {
    const cluster = newId('cl');
    await app.db
      .insertInto('clusters')
      .values({
        id: cluster,
        workspace_id: workspaceId,
        name: cluster,
        region_id: 'fsn1',
        kaas_version: 'v1.31',
        kaas_release: 'v1.31.13',
        status: 'RUNNING',
        status_message: null,
        created_at: clock.now(),
      })
      .execute();
    let credential: string | undefined;
    if (byom)
      credential = (await call(app.baseUrl, 'POST', '/v1/compute/cloud_credentials', { token, body: { name: 'mine', provider: 'hcloud', secret: 'hc-token' } }))
        .body.id;
    const config = await call(app.baseUrl, 'POST', '/v1/compute/configs', {
      token,
      body: {
        name: 'gp',
        provider: 'hcloud',
        provider_config: { provider: 'hcloud', region: 'fsn1', image: 'ubuntu-24.04', machine_type_filter: 'cx*' },
        ...(credential ? { cloud_credential_id: credential } : {}),
      },
    });
    expect(config.status).toBe(201);
    return { cluster, config: config.body.id as string };
  }

  it('a free user gets one platform machine; the rest are 403 with details; BYOM machines are exempt', async () => {
    const user = await newUser(app.db, clock, 'free');
    const platform = await clusterWithConfig(user.token, user.workspaceId, false);
    const replies = await Promise.all(
      Array.from({ length: 10 }, () =>
        call(app.baseUrl, 'POST', '/v1/compute/machines', { token: user.token, body: { cluster_id: platform.cluster, compute_config_id: platform.config } }),
      ),
    );
    expect(replies.filter((r) => r.status === 202)).toHaveLength(1);
    const refused = replies.filter((r) => r.status === 403);
    expect(refused).toHaveLength(9);
    expect(refused[0]!.body.error).toMatchObject({ code: 'quota_exceeded', details: { metric: 'compute/machines', limit: 1, usage: 1, requested: 1 } });

    const byom = await clusterWithConfig(user.token, user.workspaceId, true);
    const own = await Promise.all(
      Array.from({ length: 3 }, () =>
        call(app.baseUrl, 'POST', '/v1/compute/machines', { token: user.token, body: { cluster_id: byom.cluster, compute_config_id: byom.config } }),
      ),
    );
    expect(own.map((r) => r.status)).toEqual([202, 202, 202]);
    expect(own.every((r) => r.body.byom === true)).toBe(true);
    // Free plan: one provision at a time per cluster; the others wait their turn.
    expect(own.map((r) => r.body.status).sort()).toEqual(['provisioning', 'queued', 'queued']);
    const quota = await call(app.baseUrl, 'GET', `/v1/quotas?cluster_id=${byom.cluster}`, { token: user.token });
    expect(quota.body.find((e: { metric: string }) => e.metric === 'compute/machines')).toMatchObject({ usage: 1 });
    expect(quota.body.find((e: { metric: string }) => e.metric === 'compute/provisioning')).toMatchObject({ limit: 1, usage: 1 });
    const status = await call(app.baseUrl, 'GET', `/v1/clusters/${byom.cluster}/compute_status`, { token: user.token });
    expect(status.body.autoscaling).toMatchObject({ state: 'scaling', provisioning: 1, queued: 2, provisioning_limit: 1 });
  });

  it('a cluster’s provisioning entry shows its owner’s limit, the one enforced, whoever asks', async () => {
    const owner = await newUser(app.db, clock, 'free');
    const member = await newUser(app.db, clock, 'pro');
    await app.db
      .insertInto('workspace_members')
      .values({ workspace_id: owner.workspaceId, user_id: member.userId, role: 'member', created_at: clock.now() })
      .execute();
    const { cluster } = await clusterWithConfig(owner.token, owner.workspaceId, true);
    const asked = { token: member.token, headers: { 'x-workspace-id': owner.workspaceId } };
    const list = await call(app.baseUrl, 'GET', `/v1/quotas?cluster_id=${cluster}`, asked);
    expect(list.body.find((e: { metric: string }) => e.metric === 'compute/provisioning')).toMatchObject({ limit: 1, usage: 0 });
    const one = await call(app.baseUrl, 'GET', `/v1/quotas/compute%2Fprovisioning?cluster_id=${cluster}`, asked);
    expect(one.body).toMatchObject({ limit: 1, usage: 0, remaining: 1 });
    const status = await call(app.baseUrl, 'GET', `/v1/clusters/${cluster}/compute_status`, asked);
    expect(status.body.autoscaling.provisioning_limit).toBe(1);
  });

  it('cpu and memory quotas count the server type', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const { cluster, config } = await clusterWithConfig(user.token, user.workspaceId, false);
    // Pro: 8 cores. cx42 has 8: the first fits, a second cx22 (2 cores) does not.
    expect(
      (
        await call(app.baseUrl, 'POST', '/v1/compute/machines', {
          token: user.token,
          body: { cluster_id: cluster, compute_config_id: config, server_type: 'cx42' },
        })
      ).status,
    ).toBe(202);
    const refused = await call(app.baseUrl, 'POST', '/v1/compute/machines', {
      token: user.token,
      body: { cluster_id: cluster, compute_config_id: config, server_type: 'cx22' },
    });
    expect(refused.status).toBe(403);
    expect(refused.body.error.details).toMatchObject({ metric: 'compute/cpu', limit: 8, usage: 8, requested: 2 });
    const wrongType = await call(app.baseUrl, 'POST', '/v1/compute/machines', {
      token: user.token,
      body: { cluster_id: cluster, compute_config_id: config, server_type: 'cax11' },
    });
    expect(wrongType).toMatchObject({ status: 422, body: { error: { param: 'server_type' } } });
  });
});

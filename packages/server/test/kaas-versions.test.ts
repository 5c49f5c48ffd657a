// The Kubernetes versions of the managed control plane as data: listed by GET /v1/kaas/versions, checked when a
// cluster is created (an unknown or retired version is a 422 naming the versions on offer), and changed by an
// operator without a new release, while the clusters of a retired version keep their version and release.
import { createPlatformClient } from '@platform/client';
import { describe, expect, it } from 'vitest';
import { setKaasVersion, setKaasVersionAvailability } from '../src/resources/kaas-versions.ts';
import { apiError, newUser, useTestServer } from './support.ts';

const app = useTestServer();
const { clock } = app;

const at = (date: string) => Date.parse(`${date}T00:00:00Z`) / 1000;

describe('GET /v1/kaas/versions', () => {
  it('lists each version with its patch release, whether new clusters may use it, and when its support ends', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const api = createPlatformClient({ baseUrl: app.baseUrl, token: user.token, retry: false });
    const { data } = await api.GET('/v1/kaas/versions', {});
    expect(data).toEqual([
      { id: 'v1.30', release: 'v1.30.14', available_for_new_clusters: true, end_of_support_at: at('2025-06-28'), created_at: expect.any(Number) },
      { id: 'v1.31', release: 'v1.31.13', available_for_new_clusters: true, end_of_support_at: at('2025-10-28'), created_at: expect.any(Number) },
      { id: 'v1.32', release: 'v1.32.9', available_for_new_clusters: true, end_of_support_at: at('2026-02-28'), created_at: expect.any(Number) },
      { id: 'v1.35', release: 'v1.35.9', available_for_new_clusters: true, end_of_support_at: at('2027-02-28'), created_at: expect.any(Number) },
      { id: 'v1.36', release: 'v1.36.4', available_for_new_clusters: true, end_of_support_at: at('2027-06-28'), created_at: expect.any(Number) },
    ]);
    // Page by page, as every list.
    const first = await api.GET('/v1/kaas/versions', { params: { query: { limit: 2 } } });
    expect(first.data.map((v) => v.id)).toEqual(['v1.30', 'v1.31']);
    expect(first.pagination.has_more).toBe(true);
    const second = await api.GET('/v1/kaas/versions', { params: { query: { limit: 2, cursor: first.pagination.cursor } } });
    expect(second.data.map((v) => v.id)).toEqual(['v1.32', 'v1.35']);
  });
});

describe('a cluster’s kaas_version', () => {
  it('is one on offer: a cluster keeps the release of its version; an unknown or retired one is 422 naming those on offer', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const api = createPlatformClient({ baseUrl: app.baseUrl, token: user.token, retry: false });
    // The contract's default, and a version that was not in its old enum.
    const byDefault = await api.POST('/v1/clusters', { body: { name: 'by-default', region_id: 'fsn1' } });
    expect(byDefault.kaas.version).toBe('v1.31');
    const newest = await api.POST('/v1/clusters', { body: { name: 'newest', region_id: 'fsn1', kaas_version: 'v1.36' } });
    expect(newest.kaas.version).toBe('v1.36');
    const releases = await app.db.selectFrom('clusters').select(['id', 'kaas_release']).where('workspace_id', '=', user.workspaceId).orderBy('name').execute();
    expect(releases).toEqual([
      { id: byDefault.id, kaas_release: 'v1.31.13' },
      { id: newest.id, kaas_release: 'v1.36.4' },
    ]);

    expect(await apiError(api.POST('/v1/clusters', { body: { name: 'unknown', region_id: 'fsn1', kaas_version: 'v1.99' } }))).toMatchObject({
      status: 422,
      code: 'validation_error',
      param: 'kaas_version',
      message: 'Kubernetes v1.99 is not a version of this platform.',
      suggestion: 'Choose one of: v1.30, v1.31, v1.32, v1.35, v1.36 (GET /v1/kaas/versions).',
    });
    // Not a version at all: the contract's pattern says so before anything is looked up.
    expect(await apiError(api.POST('/v1/clusters', { body: { name: 'garbage', region_id: 'fsn1', kaas_version: 'latest' } }))).toMatchObject({
      status: 422,
      param: 'kaas_version',
    });

    // Retired by the operator: refused for new clusters, still listed; the cluster of that version keeps it.
    const old = await api.POST('/v1/clusters', { body: { name: 'old', region_id: 'fsn1', kaas_version: 'v1.30' } });
    await setKaasVersionAvailability(app.db, 'v1.30', false);
    try {
      expect(await apiError(api.POST('/v1/clusters', { body: { name: 'too-late', region_id: 'fsn1', kaas_version: 'v1.30' } }))).toMatchObject({
        status: 422,
        code: 'validation_error',
        param: 'kaas_version',
        message: 'Kubernetes v1.30 is retired: its clusters keep running, but no new cluster may use it.',
        suggestion: 'Choose one of: v1.31, v1.32, v1.35, v1.36 (GET /v1/kaas/versions).',
      });
      expect((await api.GET('/v1/kaas/versions', {})).data.find((v) => v.id === 'v1.30')).toMatchObject({ available_for_new_clusters: false });
      expect(await api.GET('/v1/clusters/{clusterId}', { params: { path: { clusterId: old.id } } })).toMatchObject({ kaas: { version: 'v1.30' } });
    } finally {
      await setKaasVersionAvailability(app.db, 'v1.30', true);
    }
  });

  it('takes a version an operator adds, at its release; a new release of a version leaves its clusters on theirs', async () => {
    const user = await newUser(app.db, clock, 'pro');
    const api = createPlatformClient({ baseUrl: app.baseUrl, token: user.token, retry: false });
    await setKaasVersion(app.db, { id: 'v1.34', release: 'v1.34.6', end_of_support_at: at('2026-10-27') }, clock.now());
    const cluster = await api.POST('/v1/clusters', { body: { name: 'added', region_id: 'fsn1', kaas_version: 'v1.34' } });
    await setKaasVersion(app.db, { id: 'v1.34', release: 'v1.34.7', end_of_support_at: at('2026-10-27') }, clock.now());
    const later = await api.POST('/v1/clusters', { body: { name: 'later', region_id: 'fsn1', kaas_version: 'v1.34' } });
    const release = async (id: string) =>
      (await app.db.selectFrom('clusters').select('kaas_release').where('id', '=', id).executeTakeFirstOrThrow()).kaas_release;
    expect([await release(cluster.id), await release(later.id)]).toEqual(['v1.34.6', 'v1.34.7']);
    expect((await api.GET('/v1/kaas/versions', {})).data.find((v) => v.id === 'v1.34')).toMatchObject({
      release: 'v1.34.7',
      available_for_new_clusters: true,
    });
    // A release of another minor is no release of this version.
    await expect(setKaasVersion(app.db, { id: 'v1.34', release: 'v1.35.9', end_of_support_at: null }, clock.now())).rejects.toMatchObject({
      param: 'release',
    });
  });
});

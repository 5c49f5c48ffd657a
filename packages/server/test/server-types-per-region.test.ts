// Server types are sold per region: a compute config's filter, a machine's chosen or requested type are matched
// among those on sale in the config's region (the simulated cloud sells its Arm types, cax, in Europe only), and a
// type a region does not sell is refused with a 422 naming the field and listing what the region sells.
import { randomUUID } from 'node:crypto';
import { createPlatformClient } from '@platform/client';
import { beforeAll, describe, expect, it } from 'vitest';
import { seedSampleResources } from '../src/db/seed.ts';
import { newId } from '../src/ids.ts';
import { SimulatedCloud } from '../src/providers/simulated.ts';
import { ProviderError } from '../src/providers/types.ts';
import { apiError, newUser, type TestUser, useTestServer } from './support.ts';

const app = useTestServer();
const { clock } = app;
let user: TestUser;
let clusterId: string;

const api = () => createPlatformClient({ baseUrl: app.baseUrl, token: user.token, retry: false });
const config = (region: string, machine_type_filter: string) =>
  api().POST('/v1/compute/configs', {
    body: {
      name: `cfg-${region}-${machine_type_filter}`,
      provider: 'hcloud',
      provider_config: { provider: 'hcloud', region, image: 'ubuntu-24.04', machine_type_filter },
    },
  });

beforeAll(async () => {
  user = await newUser(app.db, clock, 'pro');
  ({ clusterId } = await seedSampleResources(app.db, clock, user, 'per-region'));
});

describe('server types per region', () => {
  it('refuses a compute config whose filter matches only types the region does not sell, listing those it does', async () => {
    const refused = await apiError(config('ash', 'cax*'));
    expect(refused).toMatchObject({
      status: 422,
      param: 'provider_config.machine_type_filter',
      message: 'No server type matching cax* is on sale in region ash.',
    });
    expect(refused.suggestion).toMatch(/^Use a filter matching one of: cpx11, cx22, /);
    expect(refused.suggestion).not.toContain('cax');
    // The same filter in a European region is fine.
    expect((await config('fsn1', 'cax*')).provider_config.region).toBe('fsn1');
  });

  it('refuses a requested type the config’s region does not sell, and never chooses one', async () => {
    const anyType = await config('hil', '*');
    const refused = await apiError(
      api().POST('/v1/compute/machines', { body: { cluster_id: clusterId, compute_config_id: anyType.id, server_type: 'cax21' } }),
    );
    expect(refused).toMatchObject({
      status: 422,
      param: 'server_type',
      message: 'Server type cax21 is not on sale in region hil (unavailable or deprecated there).',
    });
    expect(refused.suggestion).toMatch(/^Choose one of: cpx11, cx22, cpx21/);
    expect(refused.suggestion).not.toContain('cax');
    const chosen = await api().POST('/v1/compute/machines', { body: { cluster_id: clusterId, compute_config_id: anyType.id } });
    expect(chosen.server_type).toBe('cpx11');
  });

  it('a config whose filter no longer matches a type on sale in its region makes no machine: 422 naming compute_config_id', async () => {
    // Made when its region sold an Arm type (written directly: the API refuses such a config now).
    const id = newId('cc');
    await app.db
      .insertInto('compute_configs')
      .values({
        id,
        workspace_id: user.workspaceId,
        name: 'arm-in-singapore',
        provider: 'hcloud',
        provider_config: JSON.stringify({ provider: 'hcloud', region: 'sin', image: 'ubuntu-24.04', machine_type_filter: 'cax*' }),
        cloud_credential_id: null,
        created_at: clock.now(),
      })
      .execute();
    const refused = await apiError(api().POST('/v1/compute/machines', { body: { cluster_id: clusterId, compute_config_id: id } }));
    expect(refused).toMatchObject({
      status: 422,
      param: 'compute_config_id',
      message: "No server type matching the compute config's filter cax* is on sale in region sin now.",
    });
    expect(refused.suggestion).toMatch(/^Use a compute config whose filter matches one on sale in sin: cpx11, /);
  });

  it('the simulated cloud refuses to create a server of a type its location does not sell, and creates it where it does', async () => {
    const cloud = new SimulatedCloud(app.db, clock);
    const request = (location: string) => ({
      name: `arm-${location}`,
      server_type: 'cax11',
      location,
      image: 'ubuntu-24.04',
      labels: { workflow: `wf_arm_${location}_${randomUUID()}` },
    });
    const refused = await cloud.createServer(request('ash')).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ProviderError);
    expect(refused).toMatchObject({
      kind: 'refused',
      code: 'invalid_input',
      final: true,
      message: 'The simulated cloud does not sell server type cax11 in ash.',
    });
    expect((await cloud.createServer(request('hel1'))).server_type).toBe('cax11');
  });
});

// The preamble of the files that run the workflows with COMPUTE_PROVIDER=hetzner end to end through the API: the
// stateful fake of Hetzner Cloud (up before the app and its runtime, closed after them, its violations checked after
// each test), the app with its workflow runtime pointed at it, and a machine on a new cluster. Clusters stay
// simulated.
import { createPlatformClient } from '@platform/client';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { runningCluster } from '../fixtures.ts';
import { eventually, type TestUser, useTestServer, workersSettled } from '../support.ts';
import { type HetznerFake, startHetznerFake } from './hetzner-fake.ts';

/** The platform's token (HCLOUD_TOKEN) and a user's own (BYOM), each its own project at the fake. */
export const PLATFORM = 'platform-token-wf-81b2';
export const BYOM_TOKEN = 'byom-token-wf-4c07';
export const MANAGED_BY = 'platform-wf-test';

/** Call at the top of a file, in place of useTestServer. */
export function useHetznerWorkflows() {
  let fake: HetznerFake | undefined;
  // Registered first: the fake is up when the runtime is configured, and outlives it.
  beforeAll(async () => {
    fake = await startHetznerFake({ requestsPerHour: 3_600_000, actionMs: 30, startingMs: 30 });
    // A bucket that refills as Hetzner's do, but ten times as fast as its default (one more request every 100 ms once
    // spent, not every second), so a provisioning that waits it out takes a second, not ten. The driver's test keeps
    // Hetzner's default rate.
    fake.addToken(PLATFORM, 36_000);
    fake.addToken(BYOM_TOKEN);
  });
  afterAll(async () => {
    await fake?.close();
  });
  const running = (): HetznerFake => {
    if (!fake) throw new Error('the Hetzner fake is read before beforeAll ran');
    return fake;
  };

  const app = useTestServer({
    env: () => ({
      COMPUTE_PROVIDER: 'hetzner',
      HCLOUD_TOKEN: PLATFORM,
      HCLOUD_ENDPOINT: running().url,
      HCLOUD_MANAGED_BY: MANAGED_BY,
      HCLOUD_REQUESTS_PER_HOUR: '3600000',
      // The fake's Actions take 30 ms: read them every 20 ms, not every second.
      HCLOUD_POLL_INTERVAL_MS: '20',
      PROVIDER_RATE_LIMIT: '1000',
      SIM_CONTROL_PLANE_SECONDS: '30',
    }),
    runtime: { tickMs: 20, orphanAfterSeconds: 1 },
  });

  afterEach(() => {
    expect(running().violations).toEqual([]);
  });

  const client = (user: TestUser) => createPlatformClient({ baseUrl: app.baseUrl, token: user.token, retry: false });

  const machineRow = (providerId: string) => app.db.selectFrom('machines').selectAll().where('provider_id', '=', providerId).executeTakeFirstOrThrow();
  type MachineRow = Awaited<ReturnType<typeof machineRow>>;

  return {
    app,
    /** The fake (read in tests and hooks: it exists once beforeAll ran). */
    get fake(): HetznerFake {
      return running();
    },
    /** The workers have settled, on the app's clock. */
    settled: () => workersSettled(app.db, app.clock),
    /** A running cluster, a compute config (hcloud, nbg1, cx2*; on a cloud credential of BYOM_TOKEN with `byom`) and a machine on them. */
    async machineOnNewCluster(user: TestUser, name: string, options: { byom?: boolean } = {}) {
      const api = client(user);
      const credential = options.byom
        ? await api.POST('/v1/compute/cloud_credentials', { body: { name: `own-${name}`, provider: 'hcloud', secret: BYOM_TOKEN } })
        : undefined;
      const cluster = await runningCluster(app, user, name);
      const config = await api.POST('/v1/compute/configs', {
        body: {
          name: `cfg-${name}`,
          provider: 'hcloud',
          provider_config: { provider: 'hcloud', region: 'nbg1', image: 'ubuntu-24.04', machine_type_filter: 'cx2*' },
          ...(credential ? { cloud_credential_id: credential.id } : {}),
        },
      });
      const machine = await api.POST('/v1/compute/machines', { body: { cluster_id: cluster.id, compute_config_id: config.id } });
      return { api, cluster, machine, credential };
    },
    machineRow,
    /** The machine's row once `check` holds, the workers settled and the clock moved `step` seconds between reads. */
    machineWhen: (providerId: string, check: (machine: MachineRow) => boolean, what: string, step = 2) =>
      eventually(
        async () => {
          await workersSettled(app.db, app.clock);
          app.clock.advance(step);
          return machineRow(providerId);
        },
        check,
        what,
      ),
  };
}

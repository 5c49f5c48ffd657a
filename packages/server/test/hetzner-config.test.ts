// COMPUTE_PROVIDER and the Hetzner settings: validated at start-up, and the provider chosen in one place.
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';
import { HetznerCompute } from '../src/providers/hetzner/compute.ts';
import { createComputeProvider } from '../src/providers/index.ts';
import { SimulatedCloud } from '../src/providers/simulated.ts';

describe('compute provider settings', () => {
  it('defaults to the simulated cloud and Hetzner’s public API', () => {
    expect(loadConfig({}).compute).toEqual({
      provider: 'simulated',
      hcloudToken: undefined,
      hcloudEndpoint: 'https://api.hetzner.cloud/v1',
      hcloudRequestsPerHour: 3600,
      hcloudPollIntervalMs: 1000,
      hcloudSshKeys: [],
      hcloudManagedBy: expect.stringMatching(/^platform-[0-9a-f]{12}$/),
      leftovers: { graceSeconds: 3600, dryRun: false, everySeconds: 600 },
    });
  });

  it('reads HCLOUD_SSH_KEYS as names or ids, and warns at start-up when there is none', () => {
    expect(loadConfig({ HCLOUD_SSH_KEYS: ' ops-laptop, 4711 ,,' }).compute.hcloudSshKeys).toEqual(['ops-laptop', '4711']);
    const warnings: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => warnings.push(line) });
    const simulated = new SimulatedCloud(undefined as never, { now: () => 0, nowMs: () => 0 } as never);
    const hetzner = (env: Record<string, string>) =>
      createComputeProvider(loadConfig({ COMPUTE_PROVIDER: 'hetzner', HCLOUD_TOKEN: 't', ...env }), { db: undefined as never, logger, simulated });
    hetzner({ HCLOUD_SSH_KEYS: 'ops-laptop' });
    expect(warnings).toEqual([]);
    hetzner({});
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('HCLOUD_SSH_KEYS is not set');
  });

  it('names the installation in the managed-by label: HCLOUD_MANAGED_BY, else one per public URL or database', () => {
    const managedBy = (env: Record<string, string>) => loadConfig(env).compute.hcloudManagedBy;
    expect(managedBy({ HCLOUD_MANAGED_BY: 'acme-prod' })).toBe('acme-prod');
    // Two installations sharing a BYOM project are told apart by their public URLs, else by their databases.
    expect(managedBy({ PUBLIC_URL: 'https://a.example' })).not.toBe(managedBy({ PUBLIC_URL: 'https://b.example' }));
    expect(managedBy({ PUBLIC_URL: 'https://a.example' })).toBe(managedBy({ PUBLIC_URL: 'https://a.example' }));
    expect(managedBy({ DATABASE_URL: 'postgres://u:one@db1:5432/platform' })).toBe(managedBy({ DATABASE_URL: 'postgres://u:two@db1:5432/platform' }));
    expect(managedBy({ DATABASE_URL: 'postgres://u@db1:5432/platform' })).not.toBe(managedBy({ DATABASE_URL: 'postgres://u@db2:5432/platform' }));
    // Without a public URL or a database URL: the embedded database's folder tells two installations apart.
    expect(managedBy({ DATA_DIR: '/srv/one' })).not.toBe(managedBy({ DATA_DIR: '/srv/two' }));
    expect(() => loadConfig({ HCLOUD_MANAGED_BY: 'not a label!' })).toThrow(/^HCLOUD_MANAGED_BY must be a Hetzner label value/);
  });

  it('refuses to start with one clear line when a setting is wrong', () => {
    const refusal = (env: Record<string, string>) => {
      try {
        loadConfig(env);
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        return (error as Error).message;
      }
      throw new Error('loadConfig accepted it');
    };
    expect(refusal({ COMPUTE_PROVIDER: 'hetzner' })).toBe('COMPUTE_PROVIDER=hetzner needs HCLOUD_TOKEN (a Hetzner Cloud project API token)');
    expect(refusal({ COMPUTE_PROVIDER: 'aws' })).toBe('COMPUTE_PROVIDER must be simulated or hetzner, got "aws"');
    expect(refusal({ COMPUTE_PROVIDER: 'hetzner', HCLOUD_TOKEN: 't', HCLOUD_ENDPOINT: 'ftp://x' })).toBe(
      'HCLOUD_ENDPOINT must be an http:// or https:// URL, got "ftp://x"',
    );
    expect(refusal({ HCLOUD_REQUESTS_PER_HOUR: '0' })).toMatch(/^HCLOUD_REQUESTS_PER_HOUR must be an integer/);
    expect(refusal({ HCLOUD_POLL_INTERVAL_MS: '5' })).toBe('HCLOUD_POLL_INTERVAL_MS must be an integer from 10 to 60000, got "5"');
  });

  it('builds the provider the configuration names', () => {
    const simulated = new SimulatedCloud(undefined as never, { now: () => 0, nowMs: () => 0 } as never);
    const deps = { db: undefined as never, logger: pino({ level: 'silent' }), simulated };
    expect(createComputeProvider(loadConfig({}), deps)).toBe(simulated);
    const hetzner = createComputeProvider(loadConfig({ COMPUTE_PROVIDER: 'hetzner', HCLOUD_TOKEN: 't', HCLOUD_ENDPOINT: 'http://127.0.0.1:9/v1/' }), deps);
    expect(hetzner).toBeInstanceOf(HetznerCompute);
  });
});

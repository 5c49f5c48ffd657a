// `platform` warns of a deprecated operation or parameter once per run, however many calls the command makes,
// with what the answers say (dates, successor): against the real binding of a contract with deprecations added
// (@platform/server/testing's deprecatedContract: getQuota deprecated with a sunset and a successor, listClusters's
// `limit` parameter deprecated).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, deprecatedContract, newUser, systemClock, type TestUser, useTestServer } from '@platform/server/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from './cli-runner.ts';

const app = useTestServer({ clock: systemClock, parts: { definition: deprecatedContract() as never } });
let user: TestUser;
const home = mkdtempSync(join(tmpdir(), 'platform-cli-deprecation-'));

beforeAll(async () => {
  user = await newUser(app.db, systemClock, 'pro');
  for (const name of ['one', 'two', 'three']) {
    const created = await call(app.baseUrl, 'POST', '/v1/clusters', { token: user.token, body: { name, region_id: 'fsn1' } });
    expect(created.status, JSON.stringify(created.body)).toBe(202);
  }
});

afterAll(() => rmSync(home, { recursive: true, force: true }));

const platform = (args: string[]) => cli(args, { env: { XDG_CONFIG_HOME: home, PLATFORM_API_URL: app.baseUrl, PLATFORM_TOKEN: user.token } });
const warnings = (stderr: string) => stderr.split('\n').filter((line) => line.startsWith('Warning: '));

describe('a deprecated operation', () => {
  it('is told of on stderr, with its sunset and successor, the output unchanged', async () => {
    const run = await platform(['quotas', 'get', 'compute/machines', '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ metric: 'compute/machines' });
    expect(warnings(run.stderr)).toEqual([
      `Warning: GET /v1/quotas/{metric} is deprecated since 2026-09-01; it stops answering on 2027-03-01; use its successor: ${app.baseUrl}/docs#operation/listQuotas.`,
    ]);
  });
});

describe('a deprecated parameter', () => {
  it('is told of once in a run of many calls, and again in the next run', async () => {
    for (let runs = 0; runs < 2; runs++) {
      const run = await platform(['clusters', 'list', '--all', '--limit', '1', '--json']);
      expect(run.code, run.stderr).toBe(0);
      expect((JSON.parse(run.stdout) as { data: unknown[] }).data).toHaveLength(3);
      expect(warnings(run.stderr)).toEqual([`Warning: GET /v1/clusters is deprecated since 2026-10-15; see ${app.baseUrl}/docs#operation/listClusters.`]);
    }
    const without = await platform(['clusters', 'list', '--json']);
    expect(warnings(without.stderr)).toEqual([]);
  });
});

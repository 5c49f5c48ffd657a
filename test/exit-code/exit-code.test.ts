// The test command tells the truth: vitest with the project's configuration exits non-zero when a test fails
// and 0 when all pass, with DATABASE_URL and with the embedded PostgreSQL its global setup starts otherwise.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, inject, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const vitest = join(root, 'node_modules', 'vitest', 'vitest.mjs');
const config = join(import.meta.dirname, 'fixtures', 'vitest.config.ts');

async function runFixture(file: 'failing' | 'passing', databaseUrl: string | undefined): Promise<{ code: number; output: string }> {
  // A clean environment: nothing of this run's vitest (worker ids, pool) leaks into the child's.
  const env: NodeJS.ProcessEnv = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('VITEST') && name !== 'NODE_ENV' && name !== 'TEST'),
  );
  delete env.DATABASE_URL;
  if (databaseUrl) env.DATABASE_URL = databaseUrl;
  const result = await promisify(execFile)(process.execPath, [vitest, 'run', '--config', config, `test/exit-code/fixtures/${file}.fixture.ts`], {
    cwd: root,
    env,
  }).then(
    ({ stdout, stderr }) => ({ code: 0, output: stdout + stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, output: error.stdout + error.stderr }),
  );
  return result;
}

describe.each([
  ['DATABASE_URL', () => inject('databaseUrl')],
  ['the embedded PostgreSQL', () => undefined],
])('vitest run with %s', (_, databaseUrl) => {
  it('exits non-zero when a test fails', async () => {
    const { code, output } = await runFixture('failing', databaseUrl());
    expect(output).toContain('1 failed');
    expect(code).not.toBe(0);
  }, 120_000);

  it('exits 0 when every test passes', async () => {
    const { code, output } = await runFixture('passing', databaseUrl());
    expect(output).toContain('1 passed');
    expect(code).toBe(0);
  }, 120_000);
});

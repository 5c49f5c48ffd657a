// pnpm speaks in this workspace: a mistyped script name gets pnpm's own error, not silence (no `reporter=silent`
// hides it); scripts whose output another program reads are run with `pnpm -s`, as the README says.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..');

it('a mistyped script is named in an error, with a non-zero exit', async () => {
  const failure = await run('pnpm', ['statr'], { cwd: root }).catch((error: { code: number; stdout: string; stderr: string }) => error);
  expect(failure).toMatchObject({ code: 254 });
  expect(`${(failure as { stdout: string }).stdout}${(failure as { stderr: string }).stderr}`).toMatch(/Command "statr" not found/);
});

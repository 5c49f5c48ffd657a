// pnpm speaks in this workspace: a mistyped script name gets pnpm's own error, not silence (no `reporter=silent`
// hides it); scripts whose output another program reads are run with `pnpm -s`, as the README says; and it does not
// nag: no dependency's install script is left undecided.
import { execFile } from 'node:child_process';
import { lstat, readdir, readFile } from 'node:fs/promises';
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

it('every installed package with an install script is decided in pnpm-workspace.yaml, so `pnpm install` shows no "Ignored build scripts" box', async () => {
  const workspace = await readFile(join(root, 'pnpm-workspace.yaml'), 'utf8');
  const listed = (key: string) =>
    [...(new RegExp(`^${key}:\\n((?:  - .*\\n)+)`, 'm').exec(workspace)?.[1] ?? '').matchAll(/- '?([^'\n]+)'?/g)].map((m) => m[1]);
  const decided = new Set([...listed('onlyBuiltDependencies'), ...listed('ignoredBuiltDependencies')]);
  expect(decided.size).toBeGreaterThan(0);
  // Each store entry holds its package as a folder; its dependencies beside it are links.
  const store = join(root, 'node_modules', '.pnpm');
  const undecided = new Set<string>();
  for (const entry of await readdir(store)) {
    const modules = join(store, entry, 'node_modules');
    const top = await readdir(modules).catch(() => [] as string[]);
    const names = (await Promise.all(top.map(async (n) => (n.startsWith('@') ? (await readdir(join(modules, n))).map((m) => `${n}/${m}`) : [n])))).flat();
    for (const name of names) {
      if ((await lstat(join(modules, name))).isSymbolicLink()) continue;
      const manifest = JSON.parse(await readFile(join(modules, name, 'package.json'), 'utf8').catch(() => '{}')) as { scripts?: Record<string, string> };
      const { preinstall, install, postinstall } = manifest.scripts ?? {};
      if ((preinstall || install || postinstall) && !decided.has(name)) undecided.add(name);
    }
  }
  expect([...undecided], 'name each in onlyBuiltDependencies (it must run) or ignoredBuiltDependencies (not needed), saying why').toEqual([]);
});

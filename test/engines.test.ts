// One Node requirement for the workspace: pnpm checks every workspace package's engines against the Node it
// runs on, so a package asking for more than the root warns on every `pnpm install` that the README allows.
// The scripts themselves run on the pinned `node` devDependency, which must satisfy the root's range.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');
const manifest = (dir: string) =>
  JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name: string; engines?: { node?: string }; devDependencies?: Record<string, string> };
const rootManifest = manifest(root);
const minimum = (range: string) =>
  /^>=(\d+)\.(\d+)(?:\.(\d+))?$/
    .exec(range)
    ?.slice(1)
    .map((part) => Number(part ?? 0));

it('the root states one Node range, and the runtime the scripts run on satisfies it', () => {
  const range = rootManifest.engines?.node;
  expect(range).toMatch(/^>=\d+\.\d+$/);
  const [major, minor] = minimum(range!)!;
  const [runMajor, runMinor] = rootManifest.devDependencies!.node!.split('.').map(Number);
  expect(runMajor! > major! || (runMajor === major && runMinor! >= minor!)).toBe(true);
});

it('no workspace package asks for more Node than the root', () => {
  const packages = readdirSync(join(root, 'packages')).map((name) => manifest(join(root, 'packages', name)));
  expect(packages.length).toBeGreaterThan(3);
  const mismatched = packages
    .filter((pkg) => pkg.engines?.node !== undefined && pkg.engines.node !== rootManifest.engines!.node)
    .map((pkg) => `${pkg.name}: ${pkg.engines!.node}`);
  expect(mismatched).toEqual([]);
});

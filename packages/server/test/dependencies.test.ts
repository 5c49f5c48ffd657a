// Every package the server's code imports is one of its production dependencies. A devDependency resolves in the
// workspace (pnpm installs them all), but not in the image, which has the production dependencies alone
// (`pnpm deploy --prod`, scripts/image.ts): the server would fail to start there.
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { expect, it } from 'vitest';

const SERVER = join(import.meta.dirname, '..');

/** The package each import of a file names (`@scope/name` or `name`), type-only imports aside. */
function importedPackages(source: string): string[] {
  const specifiers = [...source.matchAll(/^\s*(?:import|export)\s+(?!type\s)(?:[^'"]*?\s+from\s+)?'([^'.][^']*)'|import\('([^'.][^']*)'\)/gm)].map(
    (match) => match[1] ?? match[2]!,
  );
  return specifiers
    .filter((name) => !name.startsWith('node:') && !builtinModules.includes(name))
    .map((name) =>
      name
        .split('/')
        .slice(0, name.startsWith('@') ? 2 : 1)
        .join('/'),
    );
}

it('imports only packages listed in its dependencies', () => {
  const { dependencies } = JSON.parse(readFileSync(join(SERVER, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  const missing = new Set<string>();
  const files = readdirSync(join(SERVER, 'src'), { recursive: true, encoding: 'utf8' }).filter((file) => /\.(ts|mjs)$/.test(file) && !file.endsWith('.d.ts'));
  for (const file of files) {
    for (const name of importedPackages(readFileSync(join(SERVER, 'src', file), 'utf8'))) if (!(name in dependencies)) missing.add(`${name} (${file})`);
  }
  expect([...missing]).toEqual([]);
  // The check reads the imports it is meant to: the server's own framework among them.
  expect(importedPackages("import Koa from 'koa';\nimport type { X } from 'y';\nconst m = await import('pg-boss');")).toEqual(['koa', 'pg-boss']);
});

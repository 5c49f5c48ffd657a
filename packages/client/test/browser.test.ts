// The client must run in browsers: its sources compile without Node's types (the build's settings) and
// import nothing but the browser-safe dependencies.
import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const packageDir = join(import.meta.dirname, '..');
const tsc = join(packageDir, '..', '..', 'node_modules', '.bin', 'tsc');

it('compiles with the DOM lib and no Node types', async () => {
  await expect(promisify(execFile)(tsc, ['-p', join(packageDir, 'tsconfig.build.json'), '--noEmit'])).resolves.toBeDefined();
}, 60_000);

it('imports only its own files and browser-safe packages', async () => {
  const sourceDir = join(packageDir, 'src');
  const specifiers = new Set<string>();
  for (const file of await readdir(sourceDir)) {
    const text = await readFile(join(sourceDir, file), 'utf8');
    for (const [, specifier] of text.matchAll(/^import[^'"]*['"]([^'"]+)['"]/gm)) specifiers.add(specifier ?? '');
  }
  const external = [...specifiers].filter((specifier) => !specifier.startsWith('./')).sort();
  expect(external).toEqual(['@platform/api-types', 'eventsource-parser', 'openapi-fetch']);
});

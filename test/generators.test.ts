// The contract serves other code generators as well as ours: @hey-api/openapi-ts, swagger-typescript-api and
// openapi-typescript-codegen generate clients from the bundle, and a consumer that handles webhook payloads by their
// named schemas (ClusterCreatedEvent, InstallFailedEvent) type-checks against each, strictly, with a wrong payload
// refused: a payload's `type` is a one-value enum, which each keeps a literal type (openapi-typescript-codegen
// made a `const` any).
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const repoRoot = join(import.meta.dirname, '..');
const bin = (name: string) => join(repoRoot, 'node_modules', '.bin', name);
const bundle = join(repoRoot, 'packages', 'api-types', 'generated', 'openapi.json');
let scratch: string;

const consumer = (from: string) => `
import type { ClusterCreatedEvent, InstallFailedEvent } from '${from}';

export function summary(event: ClusterCreatedEvent | InstallFailedEvent): string {
  switch (event.type) {
    case 'cluster.created':
      return \`cluster \${event.object.name} in \${event.workspace_id}\`;
    case 'install.failed':
      return \`install \${event.object.id} failed: \${event.object.status_message ?? 'no reason given'}\`;
  }
}

// @ts-expect-error a cluster.created payload's type is fixed by its schema
export const wrong: ClusterCreatedEvent['type'] = 'install.failed';
`;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'platform-generators-'));
  await Promise.all([
    run(bin('openapi-ts'), ['-i', bundle, '-o', join(scratch, 'hey-api')], { cwd: scratch }),
    // --enum-style=union: its default TypeScript enums make each payload's `type` (an enum member intersected with
    // its constant) never.
    run(bin('swagger-typescript-api'), ['generate', '--enum-style=union', '-p', bundle, '-o', join(scratch, 'swagger-typescript-api'), '-n', 'api.ts'], {
      cwd: scratch,
    }),
    // --useUnionTypes, as --enum-style=union above: two TypeScript enums of one value intersect to never.
    run(bin('openapi'), ['--input', bundle, '--output', join(scratch, 'openapi-typescript-codegen'), '--useUnionTypes'], { cwd: scratch }),
  ]);
  await writeFile(join(scratch, 'hey-api-consumer.ts'), consumer('./hey-api/types.gen.ts'));
  await writeFile(join(scratch, 'swagger-typescript-api-consumer.ts'), consumer('./swagger-typescript-api/api.ts'));
  await writeFile(join(scratch, 'openapi-typescript-codegen-consumer.ts'), consumer('./openapi-typescript-codegen/index.ts'));
  await writeFile(
    join(scratch, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'ESNext',
        moduleResolution: 'bundler',
        lib: ['ES2022', 'DOM', 'DOM.Iterable'],
        strict: true,
        noEmit: true,
        allowImportingTsExtensions: true,
        skipLibCheck: true,
      },
      include: ['*.ts', 'hey-api/**/*.ts', 'swagger-typescript-api/**/*.ts', 'openapi-typescript-codegen/**/*.ts'],
    }),
  );
}, 180_000);

afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe('clients of other generators', () => {
  it('type-check whole, with the webhook payloads as named types', async () => {
    const result = await run(bin('tsc'), ['-p', join(scratch, 'tsconfig.json')], { cwd: scratch }).catch((error: { stdout: string }) => error);
    expect((result as { stdout: string }).stdout).toBe('');
  }, 180_000);
});

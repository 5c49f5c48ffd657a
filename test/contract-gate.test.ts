// The compatibility gate of `pnpm lint` (scripts/contract-changes.ts) on the repository as it is: each case edits a
// copy of the contract's YAML (not the bundle: the gate bundles what is written), and the gate, holding it to
// openapi/released.json, names the breaking change or lets the addition pass. Runs Redocly's bundler once per case.
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleWorking, gate, release } from '../scripts/contract-changes.ts';

const repoRoot = join(import.meta.dirname, '..');
let scratch: string;
let cases = 0;

/** A copy of what the gate reads (openapi/, redocly.yaml, CHANGELOG.md, the generated bundle) in a folder of its own. */
async function copy(): Promise<string> {
  const root = join(scratch, String(cases++));
  await cp(join(repoRoot, 'openapi'), join(root, 'openapi'), { recursive: true });
  await cp(join(repoRoot, 'packages/api-types/generated/openapi.json'), join(root, 'packages/api-types/generated/openapi.json'));
  for (const file of ['redocly.yaml', 'CHANGELOG.md']) await cp(join(repoRoot, file), join(root, file));
  return root;
}

/** Replaces `from` (which must be there) with `to` in a file of the copy. */
async function edit(root: string, file: string, from: string | RegExp, to: string): Promise<void> {
  const path = join(root, file);
  const text = await readFile(path, 'utf8');
  const edited = text.replace(from, to);
  if (edited === text) throw new Error(`${file} has no ${String(from)}: the case needs updating`);
  await writeFile(path, edited);
}

/** What a contributor does with an addition: info.version above the release, and its CHANGELOG.md section. */
async function versioned(root: string): Promise<void> {
  const released = JSON.parse(await readFile(join(root, 'openapi/released.json'), 'utf8')) as { info: { version: string } };
  const written = /^ {2}version: (\S+)$/m.exec(await readFile(join(root, 'openapi/openapi.yaml'), 'utf8'))![1]!;
  if (written !== released.info.version) return;
  const [major, minor] = released.info.version.split('.').map(Number);
  const next = `${major}.${minor! + 1}.0`;
  await edit(root, 'openapi/openapi.yaml', `  version: ${written}\n`, `  version: ${next}\n`);
  await edit(root, 'CHANGELOG.md', /^## /m, `## ${next}\n\n- An addition.\n\n## `);
}

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'platform-contract-gate-'));
});

afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe('pnpm lint on the contract as written', () => {
  it('passes the repository as it is: the contract is the one released', async () => {
    const verdict = await gate(await copy());
    expect(verdict).toMatchObject({ breaking: [], problems: [] });
  });

  it.each<[string, (root: string) => Promise<void>, RegExp]>([
    [
      'removing an operation',
      async (root) => {
        const file = 'openapi/openapi.yaml';
        await edit(root, file, '  /v1/quotas/{metric}:\n    $ref: paths/v1_quotas_{metric}.yaml\n', '');
      },
      /^ {2}GET \/v1\/quotas\/\{metric\}: operation getQuota removed$/m,
    ],
    [
      'a new required request property',
      async (root) => {
        const file = 'openapi/components/schemas/ClusterCreate.yaml';
        await edit(root, file, 'required: [name, region_id]', 'required: [name, region_id, labels]');
        await edit(root, file, /\nproperties:\n/, '\nproperties:\n  labels:\n    type: object\n    maxProperties: 16\n');
      },
      /^ {2}POST \/v1\/clusters, request body application\/json: ClusterCreate\.labels: new required property$/m,
    ],
    [
      'a property dropped from a webhook payload',
      async (root) => {
        await edit(root, 'openapi/components/schemas/QuotaReachedEvent.yaml', '      object:\n        $ref: QuotaEntry.yaml\n', '');
      },
      /^ {2}webhook quota\.reached, request body application\/json: QuotaReachedEvent\.object: may now be Cluster$/m,
    ],
    [
      "a response property's type widened",
      async (root) => {
        await edit(root, 'openapi/components/schemas/QuotaEntry.yaml', '  limit:\n    type: integer\n', '  limit:\n    type: number\n');
      },
      /^ {2}GET \/v1\/\S+, response 200 application\/json: .* › QuotaEntry\.limit: type widened from integer to number$/m,
    ],
    [
      'an operationId renamed',
      async (root) => {
        await edit(root, 'openapi/paths/v1_regions.yaml', 'operationId: listRegions', 'operationId: getRegions');
      },
      /^ {2}GET \/v1\/regions: operationId listRegions renamed to getRegions \(generated clients name their methods by it\)$/m,
    ],
  ])('fails %s, naming it', async (_name, change, named) => {
    const root = await copy();
    await change(root);
    await versioned(root);
    const verdict = await gate(root);
    expect(verdict.lines.join('\n')).toMatch(named);
    expect(verdict.lines[0]).toMatch(/^BREAKING: \d+ change\(s\) against the released /);
    expect(verdict.problems).toEqual([]);
  });

  it.each<[string, (root: string) => Promise<void>]>([
    [
      'a new optional request property',
      async (root) => {
        await edit(
          root,
          'openapi/components/schemas/ClusterCreate.yaml',
          /\nproperties:\n/,
          '\nproperties:\n  description:\n    type: string\n    maxLength: 200\n',
        );
      },
    ],
    [
      'a new event type',
      async (root) => {
        await edit(root, 'openapi/components/schemas/EventType.yaml', '  - cluster.failed\n', '  - cluster.failed\n  - cluster.deleted\n');
        const schema = (await readFile(join(root, 'openapi/components/schemas/ClusterFailedEvent.yaml'), 'utf8')).replaceAll(
          'cluster.failed',
          'cluster.deleted',
        );
        await writeFile(join(root, 'openapi/components/schemas/ClusterDeletedEvent.yaml'), schema);
        const webhook = (await readFile(join(root, 'openapi/webhooks/cluster.failed.yaml'), 'utf8'))
          .replaceAll('ClusterFailedEvent', 'ClusterDeletedEvent')
          .replaceAll('cluster.failed', 'cluster.deleted');
        await writeFile(join(root, 'openapi/webhooks/cluster.deleted.yaml'), webhook);
        await edit(root, 'openapi/openapi.yaml', '  cluster.failed:\n', '  cluster.deleted:\n    $ref: webhooks/cluster.deleted.yaml\n  cluster.failed:\n');
      },
    ],
  ])('passes %s', async (_name, change) => {
    const root = await copy();
    await change(root);
    await versioned(root);
    const verdict = await gate(root);
    expect(verdict).toMatchObject({ breaking: [], problems: [] });
    expect(verdict.lines.at(-1)).toMatch(/: 0 breaking, [1-9]\d* compatible change\(s\)\.$/);
  });
});

describe('pnpm contract:release', () => {
  it('releases nothing that breaks the last release, nor without its CHANGELOG.md section and a fresh bundle, then writes it', async () => {
    const root = await copy();
    await edit(root, 'openapi/paths/v1_regions.yaml', 'operationId: listRegions', 'operationId: getRegions');
    await versioned(root);
    expect(await release(root)).toMatchObject({ ok: false, lines: expect.arrayContaining([expect.stringMatching(/^Not released: .* breaks the released /)]) });

    // An addition, from the released version and a changelog without its section, made ready step by step.
    const addition = await copy();
    const released = JSON.parse(await readFile(join(addition, 'openapi/released.json'), 'utf8')) as { info: { version: string } };
    const [major, minor] = released.info.version.split('.').map(Number);
    const version = `${major}.${minor! + 1}.0`;
    await edit(
      addition,
      'openapi/components/schemas/ClusterCreate.yaml',
      /\nproperties:\n/,
      '\nproperties:\n  description:\n    type: string\n    maxLength: 200\n',
    );
    await edit(addition, 'openapi/openapi.yaml', /^ {2}version: \S+$/m, `  version: ${released.info.version}`);
    await writeFile(join(addition, 'CHANGELOG.md'), '# Changelog\n');
    expect((await release(addition)).lines.at(-1)).toBe(
      `Not released: info.version ${released.info.version} is not above the released ${released.info.version}.`,
    );
    await edit(addition, 'openapi/openapi.yaml', /^ {2}version: \S+$/m, `  version: ${version}`);
    expect((await release(addition)).lines.at(-1)).toBe(`Not released: CHANGELOG.md has no "## ${version}" section.`);
    await writeFile(join(addition, 'CHANGELOG.md'), `# Changelog\n\n## ${version}\n\n- ClusterCreate.description.\n`);
    expect((await release(addition)).lines.at(-1)).toMatch(/is not the contract as written: run pnpm gen/);

    await writeFile(join(addition, 'packages/api-types/generated/openapi.json'), JSON.stringify(await bundleWorking(addition), null, 2));
    expect(await release(addition)).toEqual({ ok: true, lines: [`Released ${version}: openapi/released.json is now the contract the gate holds /v1 to.`] });
    const written = JSON.parse(await readFile(join(addition, 'openapi/released.json'), 'utf8'));
    expect(written.info.version).toBe(version);
    expect(written.components.schemas.ClusterCreate.properties.description).toEqual({ type: 'string', maxLength: 200 });
    expect(await gate(addition)).toMatchObject({ breaking: [], problems: [], lines: [`Contract ${version} against the released ${version}: unchanged.`] });
  }, 60_000);
});

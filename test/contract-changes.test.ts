// The breaking-change check of `pnpm lint` (scripts/contract-changes.ts) on the real contract: one breaking change
// and one addition made to a copy of the released document, and what the check then asks of the version and the
// changelog.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { contractChanges, RELEASED, versionProblems } from '../scripts/contract-changes.ts';

type Document = Parameters<typeof contractChanges>[0] & {
  paths: Record<string, Record<string, unknown>>;
  components: { schemas: Record<string, { properties?: Record<string, unknown> }> };
};
const released = JSON.parse(readFileSync(RELEASED, 'utf8')) as Document;
const copy = () => structuredClone(released);
const changelogWith = (version: string) => `# Changelog\n\n## ${version}\n\n- Added.\n`;

describe('the contract change check', () => {
  it('fails on a removed operation unless the major version rises', () => {
    const working = copy();
    delete working.paths['/v1/quotas']!.get;
    const changes = contractChanges(released, working);
    expect(changes).toContainEqual(expect.objectContaining({ breaking: true, where: '/paths/~1v1~1quotas/get' }));
    const minor = { ...working, info: { ...working.info, version: '1.1.0' } };
    expect(versionProblems(released, minor, changes, changelogWith('1.1.0'))).toEqual([expect.stringMatching(/breaking change.*make the version 2\.0\.0/)]);
    const major = { ...working, info: { ...working.info, version: '2.0.0' } };
    expect(versionProblems(released, major, changes, changelogWith('2.0.0'))).toEqual([]);
  });

  it('takes an addition with a higher minor version and its CHANGELOG.md section, and names what is missing otherwise', () => {
    const working = copy();
    working.components.schemas.Cluster!.properties!.labels = { type: 'object', additionalProperties: { type: 'string' } };
    const changes = contractChanges(released, working);
    expect(changes.length).toBeGreaterThan(0);
    expect(changes.filter((change) => change.breaking)).toEqual([]);
    expect(versionProblems(released, working, changes, changelogWith(released.info.version))).toEqual([
      expect.stringMatching(/info\.version is still 1\.0\.0: raise it \(1\.1\.0/),
    ]);
    const raised = { ...working, info: { ...working.info, version: '1.1.0' } };
    expect(versionProblems(released, raised, changes, changelogWith('1.0.0'))).toEqual(['CHANGELOG.md has no "## 1.1.0" section listing these changes']);
    expect(versionProblems(released, raised, changes, changelogWith('1.1.0'))).toEqual([]);
  });

  it('counts a component gone as breaking (the generated clients lose its type name)', () => {
    const working = copy();
    const { Error: errorSchema, ...others } = working.components.schemas;
    working.components.schemas = { ...others, ApiError: errorSchema! };
    expect(contractChanges(released, working)).toContainEqual(expect.objectContaining({ breaking: true, where: '/components/schemas/Error' }));
  });
});

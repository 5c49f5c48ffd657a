// `pnpm lint:changes`: what the working contract changes against the last released one (openapi/released.json),
// classified by api-smart-diff as breaking or not, and whether the version and CHANGELOG.md say so:
//   - no change: nothing to say;
//   - additive changes only: `info.version` is higher than the released one and CHANGELOG.md has its section;
//   - a breaking change (an operation, field or enum value removed, a parameter newly required, a type narrowed,
//     a status changed, a component's name gone, which renames the generated types): the major version is higher.
// `pnpm contract:release` makes the working contract the released one (after a release is published).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { apiCompare } from 'api-smart-diff';
import { repoRoot } from './gen.ts';

export const RELEASED = join(repoRoot, 'openapi', 'released.json');
export const WORKING = join(repoRoot, 'packages', 'api-types', 'generated', 'openapi.json');
export const CHANGELOG = join(repoRoot, 'CHANGELOG.md');

type Document = { info: { version: string }; components?: Record<string, Record<string, unknown>> } & Record<string, unknown>;

export interface Change {
  breaking: boolean;
  /** Where, as a JSON pointer into the working (or, for a removal, the released) document. */
  where: string;
  description: string;
}

const pointer = (path: (string | number)[]) => `/${path.map((part) => String(part).replaceAll('~', '~0').replaceAll('/', '~1')).join('/')}`;

/**
 * The changes clients see: those under `paths` and `webhooks` (api-smart-diff classifies them in their request or
 * response context), and component names that are gone (the generated clients' type names).
 */
export function contractChanges(released: Document, working: Document): Change[] {
  const { diffs } = apiCompare(released, working);
  const changes: Change[] = diffs
    .filter((diff) => diff.path[0] === 'paths' || diff.path[0] === 'webhooks')
    .map((diff) => ({
      breaking: diff.type === 'breaking',
      where: pointer(diff.path),
      description: diff.description ?? `${diff.action} ${pointer(diff.path)}`,
    }));
  for (const [kind, entries] of Object.entries(released.components ?? {})) {
    for (const name of Object.keys(entries)) {
      if (!(name in (working.components?.[kind] ?? {}))) {
        changes.push({
          breaking: true,
          where: pointer(['components', kind, name]),
          description: `[Removed] component ${kind}/${name} (generated type names change)`,
        });
      }
    }
  }
  return changes;
}

const parts = (version: string) => version.split('.').map(Number) as [number, number, number];
const higher = (a: string, b: string) => {
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i]! > y[i]!;
  return false;
};

/** What is wrong with the working contract's version and changelog given its changes; empty when nothing is. */
export function versionProblems(released: Document, working: Document, changes: Change[], changelog: string): string[] {
  if (changes.length === 0) return [];
  const [from, to] = [released.info.version, working.info.version];
  const problems: string[] = [];
  const breaking = changes.filter((change) => change.breaking);
  if (breaking.length > 0 && !(parts(to)[0] > parts(from)[0])) {
    problems.push(
      `${breaking.length} breaking change(s) against the released ${from}, but info.version ${to} is not a new major version: undo them (add beside, deprecate), or make the version ${parts(from)[0] + 1}.0.0`,
    );
  } else if (!higher(to, from)) {
    problems.push(
      `the contract changed since the released ${from}, but info.version is still ${to}: raise it (${parts(from)[0]}.${parts(from)[1] + 1}.0 for additions)`,
    );
  }
  if (!new RegExp(`^## ${to.replaceAll('.', '\\.')}\\b`, 'm').test(changelog)) problems.push(`CHANGELOG.md has no "## ${to}" section listing these changes`);
  return problems;
}

const readJson = (file: string) => JSON.parse(readFileSync(file, 'utf8')) as Document;

if (import.meta.main) {
  if (process.argv.includes('--release')) {
    writeFileSync(RELEASED, readFileSync(WORKING));
    console.log(`openapi/released.json is now ${readJson(WORKING).info.version}.`);
  } else {
    const released = readJson(RELEASED);
    const working = readJson(WORKING);
    // The same bytes: nothing changed (the usual case, and api-smart-diff takes seconds on the whole document).
    const changes = readFileSync(RELEASED).equals(readFileSync(WORKING)) ? [] : contractChanges(released, working);
    for (const change of changes) console.log(`${change.breaking ? 'BREAKING ' : ''}${change.description}  (${change.where})`);
    const problems = versionProblems(released, working, changes, readFileSync(CHANGELOG, 'utf8'));
    for (const problem of problems) console.error(`Contract changes: ${problem}.`);
    if (problems.length === 0)
      console.log(`Contract ${working.info.version}: ${changes.length} change(s) since the released ${released.info.version}, versioned and in CHANGELOG.md.`);
    process.exitCode = problems.length > 0 ? 1 : 0;
  }
}

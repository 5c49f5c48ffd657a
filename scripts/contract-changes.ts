// `pnpm lint:changes`: the compatibility gate. The contract as written (openapi/, bundled here, so an edit without
// `pnpm gen` counts) is compared (scripts/contract-diff.ts) with
//   - the last released contract, openapi/released.json: what clients have. A breaking change fails, whatever
//     `info.version` says: /v1 never breaks (a change that must break goes under a new path prefix). Any change
//     needs `info.version` above the released one, in the same major, and its `## <version>` section in CHANGELOG.md.
//   - main's contract before this change: the bundle committed at `git merge-base HEAD main` (on main itself, HEAD:
//     a clean clone of main compares with itself, a dirty tree shows its own edits). A breaking change there to what
//     is not released yet is allowed (an unreleased addition may still be reshaped), and listed.
// It prints the breaking changes with where they are and counts the rest.
//
// `pnpm contract:release` records a release: the gate passes, CHANGELOG.md has the version's section, the generated
// bundle is fresh, and openapi/released.json becomes the contract. `--baseline` records a contract that breaks the
// last release as the new starting point, listing what it accepts (for a contract's first release under the gate).
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { type Change, compareContracts } from './contract-diff.ts';
import { bundleContract, repoRoot } from './gen.ts';

export type Document = { info: { version: string } } & Record<string, unknown>;

const RELEASED = 'openapi/released.json';
const BUNDLE = 'packages/api-types/generated/openapi.json';
/** Breaking changes printed in full before the rest are counted; and reshaped unreleased ones. */
const SHOWN = 20;
const SHOWN_RESHAPED = 3;

/** The contract in `root`'s openapi/, bundled as `pnpm gen` bundles it. */
export async function bundleWorking(root: string): Promise<Document> {
  const scratch = await mkdtemp(join(tmpdir(), 'platform-contract-'));
  try {
    const output = join(scratch, 'openapi.json');
    await bundleContract(root, output);
    return JSON.parse(await readFile(output, 'utf8')) as Document;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** Main's contract before this change, from git; undefined outside a clone or without a main branch. */
export function mainContract(root: string): { commit: string; document: Document } | undefined {
  const git = (...args: string[]) =>
    execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], maxBuffer: 64 << 20 }).trim();
  try {
    const main = ['main', 'origin/main'].find((ref) => {
      try {
        return git('rev-parse', '--verify', '--quiet', `${ref}^{commit}`) !== '';
      } catch {
        return false;
      }
    });
    if (!main) return undefined;
    const commit = git('merge-base', 'HEAD', main);
    const prefix = relative(git('rev-parse', '--show-toplevel'), root);
    const document = JSON.parse(git('show', `${commit}:${prefix ? `${prefix}/` : ''}${BUNDLE}`)) as Document;
    return { commit: commit.slice(0, 7), document };
  } catch {
    return undefined;
  }
}

const canonical = (value: unknown): string =>
  JSON.stringify(value, (_key, inner: unknown) =>
    inner && typeof inner === 'object' && !Array.isArray(inner) ? Object.fromEntries(Object.entries(inner).sort(([a], [b]) => (a < b ? -1 : 1))) : inner,
  );

const parts = (version: string) => version.split('.').map(Number) as [number, number, number];
const higher = (a: string, b: string) => {
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i]! > y[i]!;
  return false;
};

export interface GateInput {
  working: Document;
  released: Document | undefined;
  main: { commit: string; document: Document } | undefined;
  changelog: string;
}

export interface Verdict {
  /** Breaking changes against the released contract. */
  breaking: Change[];
  /** What else fails the gate: the version and the changelog. */
  problems: string[];
  /** What to print, short. */
  lines: string[];
}

const line = (change: Change) => `  ${change.where}: ${change.what}`;

/** What the gate says of the working contract. */
export function judge({ working, released, main, changelog }: GateInput): Verdict {
  const lines: string[] = [];
  const problems: string[] = [];
  const version = working.info.version;
  let breaking: Change[] = [];
  if (!released) {
    lines.push(`Contract ${version}: nothing released yet (pnpm contract:release records a release).`);
  } else {
    const same = canonical(released) === canonical(working);
    const changes = same ? [] : compareContracts(released, working);
    breaking = changes.filter((change) => change.breaking);
    if (breaking.length > 0) {
      lines.push(`BREAKING: ${breaking.length} change(s) against the released ${released.info.version} break /v1's clients:`);
      lines.push(...breaking.slice(0, SHOWN).map(line));
      if (breaking.length > SHOWN) lines.push(`  … and ${breaking.length - SHOWN} more.`);
      lines.push('  Add beside and deprecate instead (README.md, "Compatibility"); what must break goes under a new path prefix.');
    }
    if (!same) {
      const from = released.info.version;
      if (!higher(version, from) || parts(version)[0] !== parts(from)[0]) {
        problems.push(
          `the contract changed since the released ${from}: info.version ${version} must be above it, in major ${parts(from)[0]} (e.g. ${parts(from)[0]}.${parts(from)[1] + 1}.0)`,
        );
      }
      if (!new RegExp(`^## ${version.replaceAll('.', '\\.')}\\b`, 'm').test(changelog))
        problems.push(`CHANGELOG.md has no "## ${version}" section listing the changes`);
    }
    const compatible = changes.length - breaking.length;
    const summary = same
      ? 'unchanged'
      : `${breaking.length} breaking, ${compatible} compatible change(s)${compatible === 0 && breaking.length === 0 ? ' (text and examples only)' : ''}`;
    lines.push(`Contract ${version} against the released ${released.info.version}: ${summary}.`);
  }
  if (main) {
    const changes = canonical(main.document) === canonical(working) ? [] : compareContracts(main.document as never, working as never);
    const reported = new Set(breaking.map(line));
    const reshaped = changes.filter((change) => change.breaking && !reported.has(line(change)));
    const count =
      changes.length === 0 ? (canonical(main.document) === canonical(working) ? 'no change' : 'text and examples only') : `${changes.length} change(s)`;
    if (reshaped.length === 0) lines.push(`Since main (${main.commit}): ${count}.`);
    else {
      lines.push(`Since main (${main.commit}): ${count}, ${reshaped.length} of them reshaping what is not released yet (allowed):`);
      lines.push(...reshaped.slice(0, SHOWN_RESHAPED).map(line));
      if (reshaped.length > SHOWN_RESHAPED) lines.push(`  … and ${reshaped.length - SHOWN_RESHAPED} more.`);
    }
  }
  for (const problem of problems) lines.push(`Contract changes: ${problem}.`);
  return { breaking, problems, lines };
}

const readDocument = async (file: string) => (existsSync(file) ? (JSON.parse(await readFile(file, 'utf8')) as Document) : undefined);

/** The gate on `root` (a folder holding openapi/ and CHANGELOG.md): its verdict, main compared when given. */
export async function gate(root: string, main?: GateInput['main']): Promise<Verdict> {
  const [working, released, changelog] = await Promise.all([
    bundleWorking(root),
    readDocument(join(root, RELEASED)),
    readFile(join(root, 'CHANGELOG.md'), 'utf8'),
  ]);
  return judge({ working, released, main, changelog });
}

/** Records the working contract as released, if the gate lets it; what went wrong otherwise. */
export async function release(root: string, options: { baseline?: boolean } = {}): Promise<{ ok: boolean; lines: string[] }> {
  const [working, released, changelog] = await Promise.all([
    bundleWorking(root),
    readDocument(join(root, RELEASED)),
    readFile(join(root, 'CHANGELOG.md'), 'utf8'),
  ]);
  const version = working.info.version;
  const lines: string[] = [];
  const refuse = (reason: string) => ({ ok: false, lines: [...lines, `Not released: ${reason}.`] });
  if (released && canonical(released) === canonical(working)) return { ok: true, lines: [`${version} is released already; nothing to do.`] };
  const verdict = judge({ working, released, main: undefined, changelog });
  if (verdict.breaking.length > 0) {
    if (!options.baseline) return { ok: false, lines: [...verdict.lines, `Not released: ${version} breaks the released ${released!.info.version}.`] };
    lines.push(`A new baseline: ${verdict.breaking.length} breaking change(s) against ${released!.info.version} accepted.`);
  }
  if (released && !higher(version, released.info.version)) return refuse(`info.version ${version} is not above the released ${released.info.version}`);
  if (released && !options.baseline && parts(version)[0] !== parts(released.info.version)[0]) {
    return refuse(`info.version ${version} leaves the released major ${parts(released.info.version)[0]}, but nothing breaks`);
  }
  if (!new RegExp(`^## ${version.replaceAll('.', '\\.')}\\b`, 'm').test(changelog)) return refuse(`CHANGELOG.md has no "## ${version}" section`);
  const served = await readDocument(join(root, BUNDLE));
  if (!served || canonical(served) !== canonical(working)) return refuse(`${BUNDLE} is not the contract as written: run pnpm gen and commit it first`);
  await writeFile(join(root, RELEASED), `${JSON.stringify(working, null, 2)}\n`);
  lines.push(`Released ${version}: ${RELEASED} is now the contract the gate holds /v1 to.`);
  return { ok: true, lines };
}

if (import.meta.main) {
  if (process.argv.includes('--release')) {
    const { ok, lines } = await release(repoRoot, { baseline: process.argv.includes('--baseline') });
    for (const text of lines) console.log(text);
    process.exitCode = ok ? 0 : 1;
  } else {
    const verdict = await gate(repoRoot, mainContract(repoRoot));
    for (const text of verdict.lines) console.log(text);
    process.exitCode = verdict.breaking.length > 0 || verdict.problems.length > 0 ? 1 : 0;
  }
}

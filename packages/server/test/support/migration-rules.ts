// What in a migration's SQL breaks the previous release's server while it still runs beside the new one (rolling
// upgrades): a table or column dropped or renamed, a column's type changed, a column of an existing table made NOT
// NULL, or one added NOT NULL without a default (the old server's inserts do not name it). Read from the SQL the
// migration sends (builder and raw SQL alike), statement by statement; what a migration does to a table it created
// itself breaks nobody. The rule and the way to contract a schema anyway: src/db/migrations/README.md.

export interface Finding {
  /** `table` or `table.column`. */
  object: string;
  what: string;
}

/** The SQL without comments, string literals and dollar-quoted bodies, lower case, one space for any run of blanks. */
function normalized(text: string): string {
  return text
    .replace(/\$(\w*)\$[\s\S]*?\$\1\$/g, "''")
    .replace(/--[^\n]*/g, ' ')
    .replace(/\/\*[\s\S]*?\*\//g, ' ')
    .replace(/'(?:[^']|'')*'/g, "''")
    .replace(/"/g, '')
    .replace(/\s+/g, ' ')
    .toLowerCase();
}

/** Splits at the commas outside parentheses. */
function topLevel(list: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < list.length; i++) {
    const c = list[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      parts.push(list.slice(start, i).trim());
      start = i + 1;
    }
  }
  parts.push(list.slice(start).trim());
  return parts.filter(Boolean);
}

const bare = (name: string) => name.replace(/^public\./, '');

/** One ALTER TABLE action on `table`: what of it breaks the previous release, if anything. */
function alterAction(table: string, action: string): Finding | undefined {
  let m: RegExpExecArray | null;
  if ((m = /^drop (?!constraint\b)(?:column )?(?:if exists )?([\w.]+)/.exec(action))) return { object: `${table}.${m[1]}`, what: 'drops the column' };
  if ((m = /^rename to ([\w.]+)/.exec(action))) return { object: table, what: `renames the table to ${m[1]}` };
  if ((m = /^rename (?!constraint\b)(?:column )?([\w.]+) to ([\w.]+)/.exec(action)))
    return { object: `${table}.${m[1]}`, what: `renames the column to ${m[2]}` };
  // `ALTER [COLUMN] c …`: a column may be named `type`, but then COLUMN is written before it.
  const altered = /^alter (?:column (\w+)|(?!column )(\w+)) (.*)$/.exec(action);
  const column = altered?.[1] ?? altered?.[2];
  if (altered && /^(?:set data )?type /.test(altered[3]!)) return { object: `${table}.${column}`, what: 'changes the column type' };
  if (altered && /^set not null/.test(altered[3]!)) return { object: `${table}.${column}`, what: 'makes the column NOT NULL' };
  if ((m = /^add (?!constraint\b|primary key\b|unique\b|check\b|foreign key\b|exclude\b)(?:column )?(?:if not exists )?([\w.]+) (.*)$/.exec(action))) {
    const definition = m[2]!;
    if (/\bnot null\b/.test(definition) && !/\bdefault\b/.test(definition) && !/\bgenerated\b/.test(definition)) {
      return { object: `${table}.${m[1]}`, what: 'adds the column NOT NULL without a default' };
    }
  }
  return undefined;
}

/**
 * What the statements break, given in the order they ran. `created` holds the tables the migration has created so
 * far (it grows as CREATE TABLE statements are read).
 */
export function breakingChanges(statements: readonly string[], created = new Set<string>()): Finding[] {
  const findings: Finding[] = [];
  for (const text of statements) {
    for (const statement of normalized(text)
      .split(';')
      .map((s) => s.trim())
      .filter(Boolean)) {
      let m: RegExpExecArray | null;
      if ((m = /^create (?:unlogged )?table (?:if not exists )?([\w.]+)/.exec(statement))) {
        created.add(bare(m[1]!));
      } else if ((m = /^drop table (?:if exists )?(.*?)(?: cascade| restrict)?$/.exec(statement))) {
        for (const table of topLevel(m[1]!).map(bare)) if (!created.has(table)) findings.push({ object: table, what: 'drops the table' });
      } else if ((m = /^alter table (?:if exists )?(?:only )?([\w.]+) (.*)$/.exec(statement))) {
        const table = bare(m[1]!);
        if (created.has(table)) continue;
        for (const action of topLevel(m[2]!)) {
          const finding = alterAction(table, action);
          if (finding) findings.push(finding);
        }
      }
    }
  }
  return findings;
}

/** A migration's `contracts` export: each earlier, released migration that expanded, and what this one removes of it. */
export type Contracts = Readonly<Record<string, readonly string[]>>;

/**
 * Why a migration's findings are refused, one line each (none: it passes). A finding passes when the migration's
 * `contracts` lists its object under a migration that ran before it and is released (up to `lastReleased`): the
 * expand step shipped in an earlier release, whose server no longer needed what this one removes. `order`: every
 * migration's name, oldest first.
 */
export function refusals(name: string, findings: readonly Finding[], contracts: Contracts, order: readonly string[], lastReleased: string): string[] {
  const position = (migration: string) => order.indexOf(migration);
  const lines: string[] = [];
  for (const [expand, objects] of Object.entries(contracts)) {
    if (position(expand) < 0) lines.push(`${name}: contracts names ${expand}, which is no migration`);
    else if (position(expand) >= position(name)) lines.push(`${name}: contracts names ${expand}, which does not run before it`);
    else if (position(expand) > position(lastReleased))
      lines.push(`${name}: contracts names ${expand}, which is not released yet (the last release ends at ${lastReleased}): contract in a later release`);
    for (const object of objects) {
      if (!findings.some((finding) => finding.object === object)) lines.push(`${name}: contracts lists ${object}, which it does not remove or change`);
    }
  }
  const allowed = new Set(
    Object.entries(contracts)
      .filter(([expand]) => position(expand) >= 0 && position(expand) < position(name) && position(expand) <= position(lastReleased))
      .flatMap(([, objects]) => objects),
  );
  for (const finding of findings) {
    if (!allowed.has(finding.object)) {
      lines.push(
        `${name} ${finding.what} ${finding.object}, which the previous release's server still uses while both run: expand now (add beside, write both), contract in a later release with \`export const contracts\` (src/db/migrations/README.md)`,
      );
    }
  }
  return lines;
}

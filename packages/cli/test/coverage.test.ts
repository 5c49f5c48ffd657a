// The CLI covers the contract: every operation has a command (COMMANDS) or a stated reason not to (UNCOVERED),
// every command of the program is the command of some operation, and the source calls each operation it claims.
// (suggestions.test.ts checks that each command COMMANDS names exists with its arguments and options.)
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { processIo } from '../src/io.ts';
import { buildProgram } from '../src/program.ts';
import { COMMANDS, UNCOVERED } from '../src/suggestions.ts';

const document = createRequire(import.meta.url)('@platform/api-types/openapi.json') as {
  paths: Record<string, Record<string, { operationId?: string }>>;
};

/** Every operation of the contract: its id, method and path. */
const operations = Object.entries(document.paths).flatMap(([path, item]) =>
  Object.entries(item).flatMap(([method, operation]) => (operation.operationId ? [{ id: operation.operationId, method: method.toUpperCase(), path }] : [])),
);

/** Commands that are no operation's own, and why they exist. */
const HELPERS: Record<string, string> = {
  'webhooks listen': 'forwards the events feed to a local receiver, for developing one; `events list` and `events follow` are the operations’ commands',
  config: 'shows the CLI’s own settings and where each comes from; nothing to ask the API',
  completion: 'prints a shell completion script made from the program’s commands',
};

/** `platform compute machines list --cluster <id>` → `compute machines list`. */
const wordsOf = (usage: string) => usage.split(' <')[0]!.split(' --')[0]!.split(' ').slice(1).join(' ');

/** The commands of the program that run something (those without subcommands), as their words under `platform`. */
function leaves(command: Command, path: string[] = []): string[] {
  if (command.commands.length === 0) return [path.join(' ')];
  return command.commands.flatMap((sub) => leaves(sub, [...path, sub.name()]));
}

/** The CLI's own source, where the calls are. */
function sources(dir = fileURLToPath(new URL('../src', import.meta.url))): string {
  return readdirSync(dir, { withFileTypes: true })
    .map((entry) => (entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith('.ts') ? readFileSync(join(dir, entry.name), 'utf8') : ''))
    .join('\n');
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('the CLI covers the contract', () => {
  it('has a command for every operation, or says in UNCOVERED why not', () => {
    const covered = new Set([...Object.keys(COMMANDS), ...Object.keys(UNCOVERED)]);
    expect(operations.filter((o) => !covered.has(o.id)).map((o) => `${o.id} (${o.method} ${o.path})`)).toEqual([]);
    expect(Object.keys(UNCOVERED).filter((id) => id in COMMANDS)).toEqual([]);
    // No entry outlives its operation.
    const ids = new Set(operations.map((o) => o.id));
    expect([...covered].filter((id) => !ids.has(id))).toEqual([]);
    for (const reason of Object.values(UNCOVERED)) expect(reason.length).toBeGreaterThan(20);
  });

  it('has no command that is not the command of an operation, but the helpers named here', () => {
    const named = new Set([...Object.values(COMMANDS).map(wordsOf), ...Object.keys(HELPERS)]);
    expect(leaves(buildProgram(processIo())).filter((words) => !named.has(words))).toEqual([]);
    expect(Object.keys(HELPERS).filter((words) => !leaves(buildProgram(processIo())).includes(words))).toEqual([]);
  });

  it('calls each operation it has a command for, by method and path or by operationId', () => {
    const source = sources();
    const uncalled = operations
      .filter((o) => o.id in COMMANDS)
      .filter(
        (o) => !new RegExp(`\\.${o.method}\\(\\s*'${escape(o.path)}'`).test(source) && !new RegExp(`\\.${o.id}\\(|\\.paginate\\(\\s*'${o.id}'`).test(source),
      );
    expect(uncalled.map((o) => `${o.id}: ${COMMANDS[o.id as keyof typeof COMMANDS]}`)).toEqual([]);
  });
});

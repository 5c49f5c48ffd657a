// The CLI covers the contract: every operation has a command (COMMANDS) or a stated reason not to (UNCOVERED),
// but a list, which `platform api <path>` reads when it has no command of its own; every command of the program
// is the command of some operation; and the source calls each operation it claims. (suggestions.test.ts checks
// that each command COMMANDS names exists with its arguments and options.)
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { processIo } from '../src/io.ts';
import { buildProgram } from '../src/program.ts';
import { COMMANDS, UNCOVERED } from '../src/suggestions.ts';

interface Schema {
  $ref?: string;
  type?: string;
  properties?: Record<string, Schema>;
}

const document = createRequire(import.meta.url)('@platform/api-types/openapi.json') as {
  paths: Record<string, Record<string, { operationId?: string; responses?: Record<string, { content?: Record<string, { schema?: Schema }> }> }>>;
  components: { schemas: Record<string, Schema> };
};

const resolve = (schema: Schema | undefined): Schema | undefined =>
  schema?.$ref ? resolve(document.components.schemas[schema.$ref.replace('#/components/schemas/', '')]) : schema;

/** A list: a GET whose 200 answers the envelope `{data: [...], pagination}` that `platform api --all` pages through. */
function isList(method: string, operation: (typeof document.paths)[string][string]): boolean {
  const body = resolve(operation.responses?.['200']?.content?.['application/json']?.schema);
  return method === 'get' && resolve(body?.properties?.data)?.type === 'array' && body?.properties?.pagination?.$ref === '#/components/schemas/Pagination';
}

/** Every operation of the contract: its id, method and path, and whether it is a list. */
const operations = Object.entries(document.paths).flatMap(([path, item]) =>
  Object.entries(item).flatMap(([method, operation]) =>
    operation.operationId ? [{ id: operation.operationId, method: method.toUpperCase(), path, list: isList(method, operation) }] : [],
  ),
);
type Operation = (typeof operations)[number];

/** The operations with no command, no reason in UNCOVERED, and that are no list (which `platform api` reads). */
const uncovered = (of: Operation[]) => of.filter((o) => !(o.id in COMMANDS) && !(o.id in UNCOVERED) && !o.list).map((o) => `${o.id} (${o.method} ${o.path})`);

/** Commands that are no operation's own, and why they exist. */
const HELPERS: Record<string, string> = {
  'webhooks listen': 'forwards the events feed to a local receiver, for developing one; `events list` and `events follow` are the operations’ commands',
  config: 'shows the CLI’s own settings and where each comes from; nothing to ask the API',
  completion: 'prints a shell completion script made from the program’s commands',
  api: 'any GET of the API as JSON; it is the command of each list that has none of its own',
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
  it('has a command for every operation, or says in UNCOVERED why not, but for the lists `platform api` reads', () => {
    const covered = new Set([...Object.keys(COMMANDS), ...Object.keys(UNCOVERED)]);
    expect(uncovered(operations)).toEqual([]);
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

  it('takes a list with no command of its own as read by `platform api`, and nothing else', () => {
    const list = operations.find((o) => o.id === 'listSuspensions') as Operation;
    const get = operations.find((o) => o.id === 'getSuspension') as Operation;
    expect([list.list, get.list]).toEqual([true, false]);
    // The same operations as new ones, with no command: the list is covered, the get is reported.
    expect(
      uncovered([
        { ...list, id: 'listWorkspaceSuspensions' },
        { ...get, id: 'getWorkspaceSuspension' },
      ]),
    ).toEqual(['getWorkspaceSuspension (GET /v1/compute/suspensions/{id})']);
    // What a list's command does: a path, and the page options of every list command.
    const api = buildProgram(processIo()).commands.find((command) => command.name() === 'api');
    expect(api?.registeredArguments.map((argument) => argument.name())).toEqual(['path']);
    expect(api?.options.map((option) => option.long)).toEqual(['--limit', '--cursor', '--all']);
    expect(operations.filter((o) => o.list).length).toBeGreaterThan(10);
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

// The table from operations to commands, and the rewriting of the service's suggestions into CLI words.
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { processIo } from '../src/io.ts';
import { buildProgram } from '../src/program.ts';
import { COMMANDS, rewrite, suggestionFor } from '../src/suggestions.ts';

/** The command at a path of words under `platform`, with the options it takes. */
function find(words: string[]): Command | undefined {
  let command: Command | undefined = buildProgram(processIo());
  for (const word of words) command = command?.commands.find((c) => c.name() === word);
  return command;
}

describe('COMMANDS', () => {
  it('names commands and options the program has', () => {
    for (const [operation, usage] of Object.entries(COMMANDS)) {
      const words = usage.split(' <')[0]!.split(' --')[0]!.split(' ').slice(1);
      const command = find(words);
      expect(command, `${operation}: ${usage}`).toBeDefined();
      for (const flag of usage.match(/--[\w-]+/g) ?? [])
        expect(
          command!.options.map((o) => o.long),
          `${operation}: ${flag}`,
        ).toContain(flag);
      // Arguments in the usage (`<id>`) are arguments of the command.
      expect(command!.registeredArguments.length, usage).toBe((usage.replace(/--[\w-]+ <[^>]+>/g, '').match(/<[^>]+>/g) ?? []).length);
    }
  });
});

describe('rewrite', () => {
  it('turns requests and operationIds that have a command into the command, and leaves the rest', () => {
    expect(rewrite('List your clusters with GET /v1/clusters and use their ids.')).toBe('List your clusters with `platform clusters list` and use their ids.');
    expect(rewrite('See the createInstall operation in the API reference for what region_id accepts.')).toBe(
      'See `platform installs create --help` for what region_id accepts.',
    );
    expect(rewrite('See the getQuota operation in the API reference.')).toBe('See `platform quotas get --help`.');
    expect(rewrite('List the workspace’s cloud credentials with GET /v1/compute/cloud_credentials.')).toBe(
      'List the workspace’s cloud credentials with `platform compute cloud-credentials list`.',
    );
    expect(rewrite('Enable it first (PATCH /v1/webhook_endpoints/{id}).')).toBe('Enable it first (`platform webhooks update <id>`).');
    // Operations without a command (UNCOVERED) stay as they are, so the hint still works.
    expect(rewrite('Approve it with POST /v1/auth/device/approve.')).toBe('Approve it with POST /v1/auth/device/approve.');
    expect(rewrite('See the approveDeviceCode operation in the API reference.')).toBe('See the approveDeviceCode operation in the API reference.');
    expect(rewrite('Or create one whose workspace_ids include it (POST /v1/user/tokens).')).toBe(
      'Or create one whose workspace_ids include it (`platform tokens create`).',
    );
    expect(rewrite('Send the body again.')).toBe('Send the body again.');
  });

  it('says how long to wait instead of naming the Retry-After header', () => {
    expect(rewrite('Wait for the number of seconds in Retry-After, then retry.', 17)).toBe('Wait for 17 seconds, then retry.');
    expect(rewrite('Wait for the number of seconds in Retry-After, then retry.', 1)).toBe('Wait for 1 second, then retry.');
    expect(rewrite('Wait for the number of seconds in Retry-After, then retry.')).toBe('Wait for a minute, then retry.');
  });
});

describe('suggestionFor', () => {
  const base = { status: 404, param: undefined, suggestion: undefined, retryAfter: undefined, details: undefined };

  it('sends every 401 to `platform login`', () => {
    expect(suggestionFor({ ...base, status: 401, suggestion: 'Send Authorization: Bearer <token> with a valid token.' })).toMatch(/^Run `platform login`/);
  });

  it('answers parameters the CLI sets with its own commands and flags, list indexes ignored', () => {
    expect(suggestionFor({ ...base, param: 'region_id', suggestion: 'List the regions with GET /v1/regions and use one of their ids.' })).toBe(
      'List the regions with `platform regions`; --region takes one of their ids.',
    );
    expect(
      suggestionFor({ ...base, status: 422, param: 'overrides[1].template_helm_source_id', suggestion: "Use the id of one of the product's sources." }),
    ).toContain('--values <source>=<file>');
    expect(
      suggestionFor({ ...base, status: 403, param: 'X-Workspace-Id', suggestion: 'List your workspaces with GET /v1/workspaces and send one of their ids.' }),
    ).toContain('`platform workspaces use <id>`');
  });

  it('answers a token restricted to other workspaces with a token that covers the one asked for', () => {
    const restricted = {
      ...base,
      status: 403,
      param: 'X-Workspace-Id',
      suggestion: 'Use a token that may act in that workspace, or create one whose workspace_ids include it (POST /v1/user/tokens).',
      details: { workspace_ids: ['ws_a'], workspace_id: 'ws_b' },
    };
    expect(suggestionFor(restricted)).toBe(
      'This token may act only in ws_a. Use one that covers ws_b, or create it (signed in with `platform login`): `platform tokens create --name <name> --workspace-ids ws_b`.',
    );
  });

  it('keeps a shape hint about a parameter pointing at the command’s help, and the service’s own words otherwise', () => {
    expect(
      suggestionFor({
        ...base,
        status: 422,
        param: 'region_id',
        suggestion: 'See the createCluster operation in the API reference for what region_id accepts.',
      }),
    ).toBe('See `platform clusters create --help` for what region_id accepts.');
    expect(suggestionFor({ ...base, status: 409, param: 'name', suggestion: 'Choose another name.' })).toBe('Choose another name.');
    expect(suggestionFor(base)).toBeUndefined();
  });
});

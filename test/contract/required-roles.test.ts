// An operation's description and its `x-required-role` say the same thing: every role the description names as
// needed ("Admin." at its start, "Only the workspace's owner may …", "Needs the admin role") is the role the
// server enforces, so the reference never promises more or less than the check.
import definition from '@platform/api-types/openapi.json' with { type: 'json' };
import { describe, expect, it } from 'vitest';

type Role = 'viewer' | 'member' | 'admin' | 'owner';
const ROLES: Role[] = ['viewer', 'member', 'admin', 'owner'];

const operations = Object.values(definition.paths as Record<string, Record<string, { operationId?: string; description?: string; 'x-required-role'?: Role }>>)
  .flatMap((item) => Object.values(item))
  .filter((op) => typeof op === 'object' && op.operationId !== undefined);

/** The least role the description says the operation needs, or undefined when it names none. */
function roleNamedIn(description: string): Role | undefined {
  const named: Role[] = [];
  const leading = /^(Viewer|Member|Admin|Owner)\./.exec(description);
  if (leading) named.push(leading[1]!.toLowerCase() as Role);
  for (const match of description.matchAll(/Only the workspace's ([a-z ,]+?) may\b/g)) {
    const least = ROLES.find((role) => new RegExp(`\\b${role}s?\\b`).test(match[1]!));
    if (least) named.push(least);
  }
  for (const match of description.matchAll(/Needs the (viewer|member|admin|owner) role/g)) named.push(match[1] as Role);
  return named.length === 0 ? undefined : named.reduce((a, b) => (ROLES.indexOf(a) <= ROLES.indexOf(b) ? a : b));
}

describe('roles named in descriptions', () => {
  it('reads the forms the descriptions use', () => {
    expect(roleNamedIn('Admin. Adds a URL.')).toBe('admin');
    expect(roleNamedIn("Returns it. Only the workspace's owner may ask (403 for other members).")).toBe('owner');
    expect(roleNamedIn("Lists them. Only the workspace's admins and owner may read it.")).toBe('admin');
    expect(roleNamedIn('Needs the member role, as every change does.')).toBe('member');
    expect(roleNamedIn('Returns a credential of a workspace the caller is a member of.')).toBeUndefined();
  });

  it.each(operations.map((op) => [op.operationId!, op] as const))('%s: the role its description names is its x-required-role', (_id, op) => {
    const named = roleNamedIn(op.description ?? '');
    if (named !== undefined) expect(op['x-required-role']).toBe(named);
  });
});

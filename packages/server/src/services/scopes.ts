// Token scopes: a resource group × read/write, as the contract's Scope schema lists them. `write` includes `read`
// of its group. A session token holds every scope; a PAT the ones it was created with; a JWT its `scope` claim.
import type { Schema } from '@platform/api-types';
import definition from '@platform/api-types/openapi.json' with { type: 'json' };
import { ApiError } from '../errors.ts';

export type Scope = Schema<'Scope'>;

/** Every scope, in the contract's order. */
export const ALL_SCOPES: readonly Scope[] = (definition as unknown as { components: { schemas: { Scope: { enum: Scope[] } } } }).components.schemas.Scope.enum;

/** What a token may do: `all` for a session token, else its scopes. */
export type Scopes = 'all' | readonly string[];

export function holds(scopes: Scopes, required: string): boolean {
  if (scopes === 'all') return true;
  const [group, access] = required.split(':');
  return scopes.includes(required) || (access === 'read' && scopes.includes(`${group}:write`));
}

export function missingScope(required: string, operationId: string): ApiError {
  return new ApiError('forbidden', `This token lacks the scope ${required}, which ${operationId} needs.`, {
    param: 'Authorization',
    suggestion: `Create a personal access token with the scope ${required} (POST /v1/user/tokens).`,
    details: { required_scope: required },
  });
}

/** The scopes a JWT's space-separated `scope` claim (RFC 8693 §4.2) grants; unknown ones are ignored. */
export function scopesOfClaim(claim: unknown): Scope[] {
  if (typeof claim !== 'string') return [];
  const named = new Set(claim.split(' '));
  return ALL_SCOPES.filter((scope) => named.has(scope));
}

/**
 * The scopes a new token asks for, `*` expanded to every scope of the calling token; 403 naming the first one the
 * calling token lacks, so a token can never mint a stronger one.
 */
export function grantableScopes(requested: readonly string[], caller: Scopes, operationId: string): Scope[] {
  const wanted = requested.includes('*') ? (caller === 'all' ? ALL_SCOPES : ALL_SCOPES.filter((scope) => holds(caller, scope))) : requested;
  for (const scope of wanted) if (!holds(caller, scope)) throw missingScope(scope, operationId);
  return ALL_SCOPES.filter((scope) => wanted.includes(scope));
}

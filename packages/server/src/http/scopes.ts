// The scope an operation needs, from its security requirements in the contract (OperationMeta.requiredScope),
// checked against the caller's token before the request's body is read.
import type { Caller } from '../operations/types.ts';
import { holds, missingScope } from '../services/scopes.ts';
import type { OperationMeta } from './contract.ts';

export function checkScope(meta: OperationMeta, caller: Caller | undefined): void {
  if (caller && meta.requiredScope !== undefined && !holds(caller.scopes, meta.requiredScope)) throw missingScope(meta.requiredScope, meta.operationId);
}

// The real contract with deprecations added, bound by tests through the real binding (createApp's `definition`):
// `getQuota` deprecated with a sunset and a successor, and `listClusters`'s `limit` parameter deprecated with
// neither. It proves the deprecation headers (http/deprecation.ts) and the client's and CLI's notices whether or
// not the contract deprecates anything yet.
import definition from '@platform/api-types/openapi.json' with { type: 'json' };

export type ContractDocument = {
  paths: Record<string, Record<string, { operationId: string; deprecated?: boolean; parameters?: Record<string, unknown>[] } & Record<string, unknown>>>;
  components: { parameters: Record<string, Record<string, unknown>> };
};

/** The operation of `contract` named `operationId`. */
export const operationOf = (contract: ContractDocument, operationId: string) =>
  Object.values(contract.paths)
    .flatMap((item) => Object.values(item))
    .find((operation) => operation.operationId === operationId)!;

export const bundledContract = () => structuredClone(definition) as unknown as ContractDocument;

export function deprecatedContract(): ContractDocument {
  const contract = bundledContract();
  Object.assign(operationOf(contract, 'getQuota'), {
    deprecated: true,
    'x-deprecated-at': '2026-09-01',
    'x-sunset': '2027-03-01',
    'x-successor': 'listQuotas',
  });
  const listClusters = operationOf(contract, 'listClusters');
  listClusters.parameters = listClusters.parameters!.map((parameter) => {
    const resolved = typeof parameter.$ref === 'string' ? contract.components.parameters[parameter.$ref.split('/').pop()!]! : parameter;
    return resolved.name === 'limit' ? { ...resolved, deprecated: true, 'x-deprecated-at': '2026-10-15' } : parameter;
  });
  return contract;
}

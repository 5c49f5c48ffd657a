// The handler map holds exactly one handler per operationId of the contract: nothing missing (also a type error)
// and nothing else (a helper exported by an operation file would land in the map).
import definition from '@platform/api-types/openapi.json' with { type: 'json' };
import { expect, it } from 'vitest';
import { handlers } from '../src/operations/index.ts';

it('has a handler for each operationId and nothing else', () => {
  const paths = (definition as unknown as { paths: Record<string, Record<string, { operationId?: string }>> }).paths;
  const operationIds = Object.values(paths).flatMap((item) =>
    Object.values(item).flatMap((op) => (typeof op === 'object' && op?.operationId ? [op.operationId] : [])),
  );
  expect(operationIds.length).toBeGreaterThan(40);
  expect(Object.keys(handlers).sort()).toEqual([...new Set(operationIds)].sort());
  expect(Object.values(handlers).every((h) => typeof h === 'function')).toBe(true);
});

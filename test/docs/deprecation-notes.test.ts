// The reference docs say of a deprecated operation or parameter since when, until when and what replaces it, at the
// start of its description (Redoc marks it deprecated beside): scripts/gen.ts, on the contract with deprecations
// added (the fixture the server's deprecation tests bind).

import { deprecatedContract } from '@platform/server/testing';
import { describe, expect, it } from 'vitest';
import { withDeprecationNotes } from '../../scripts/gen.ts';

describe('the docs of a deprecation', () => {
  it('start its description with the dates and the successor, linked', () => {
    const doc = withDeprecationNotes(deprecatedContract() as never) as ReturnType<typeof deprecatedContract>;
    expect(doc.paths['/v1/quotas/{metric}']!.get!.description).toMatch(
      /^\*\*Deprecated\*\* since 2026-09-01; it stops answering on 2027-03-01; use \[`listQuotas`\]\(#operation\/listQuotas\) instead\. Its answers say so in the `Deprecation`, `Sunset` and `Link` headers \(see Compatibility\)\.\n\n./,
    );
    const limit = doc.paths['/v1/clusters']!.get!.parameters!.find((parameter) => parameter.name === 'limit')!;
    expect(limit.description).toMatch(/^\*\*Deprecated\*\* since 2026-10-15\. Its answers say so/);
    expect(doc.paths['/v1/regions']!.get!.description).not.toContain('Deprecated');
  });
});

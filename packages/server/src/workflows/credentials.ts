// BYOM: a machine whose compute config names a cloud credential is driven with that credential's token
// (resources/cloud-credentials.ts opens it only inside the provider call).

import type { StepContext } from '../engine/engine.ts';
import type { ProviderCredential } from '../providers/types.ts';
import * as cloudCredentials from '../resources/cloud-credentials.ts';

/** The machine's BYOM credential, or undefined for a machine on the platform's account. */
export const machineCredential = (ctx: StepContext, providerId: string): Promise<ProviderCredential | undefined> =>
  cloudCredentials.machineCredential(ctx.db, providerId, ctx.clock.now(), ctx.secrets);

// BYOM: a machine whose compute config names a cloud credential is driven with that credential's token. The
// sealed secret is opened only when the driver reads the token, inside the provider call;
// workflow state, logs and errors carry the credential's id, never the token.
import type { ProviderCredential } from '../providers/types.ts';
import { byomCredentialOfMachine } from '../resources/cloud-credentials.ts';
import type { StepContext } from './engine.ts';

/** The machine's BYOM credential, or undefined for a machine on the platform's account. */
export async function machineCredential(ctx: StepContext, providerId: string): Promise<ProviderCredential | undefined> {
  const credential = await byomCredentialOfMachine(ctx.db, providerId, ctx.clock.now());
  if (!credential) return undefined;
  const { secrets } = ctx;
  const { id, sealed } = credential;
  // Opened when the driver reads it (a simulated cloud never does); not enumerable, so no log or JSON holds it.
  return Object.defineProperty({ id } as ProviderCredential, 'token', {
    enumerable: false,
    get() {
      if (!secrets) throw new Error(`Cloud credential ${id} cannot be opened: this worker has no secrets key.`);
      return secrets.open(sealed);
    },
  });
}

// BYOM: a machine whose compute config names a cloud credential is driven with that credential's token. The
// sealed secret is opened only when the driver reads the token, inside the provider call;
// workflow state, logs and errors carry the credential's id, never the token.
import type { ProviderCredential } from '../providers/types.ts';
import type { StepContext } from './engine.ts';

/** The machine's BYOM credential, or undefined for a machine on the platform's account. */
export async function machineCredential(ctx: StepContext, providerId: string): Promise<ProviderCredential | undefined> {
  const row = await ctx.db
    .selectFrom('machines')
    .innerJoin('compute_configs', 'compute_configs.id', 'machines.compute_config_id')
    .select('compute_configs.cloud_credential_id')
    .where('machines.provider_id', '=', providerId)
    .executeTakeFirst();
  if (!row?.cloud_credential_id) return undefined;
  const credential = await ctx.db.selectFrom('cloud_credentials').select(['id', 'secret_ciphertext']).where('id', '=', row.cloud_credential_id).executeTakeFirst();
  if (!credential) throw new Error(`Cloud credential ${row.cloud_credential_id} no longer exists.`);
  await ctx.db.updateTable('cloud_credentials').set({ last_used_at: ctx.clock.now() }).where('id', '=', credential.id).execute();
  const { secrets } = ctx;
  const { id, secret_ciphertext: sealed } = credential;
  // Opened when the driver reads it (a simulated cloud never does); not enumerable, so no log or JSON holds it.
  return Object.defineProperty({ id } as ProviderCredential, 'token', {
    enumerable: false,
    get() {
      if (!secrets) throw new Error(`Cloud credential ${id} cannot be opened: this worker has no secrets key.`);
      return secrets.open(sealed);
    },
  });
}

// Status and enum columns that hold a contract value get a CHECK constraint listing exactly the contract's enum
// (migrations-check.test.ts compares every such constraint with the generated contract), so a value the API
// cannot express never reaches a row.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE machines ADD CONSTRAINT machines_status_check
      CHECK (status IN ('queued', 'provisioning', 'ready', 'failed', 'suspending', 'suspended', 'deleting'));
    ALTER TABLE suspensions ADD CONSTRAINT suspensions_status_check
      CHECK (status IN ('suspending', 'suspended', 'resuming', 'resumed', 'failed'));
    ALTER TABLE products ADD CONSTRAINT products_regeneration_status_check
      CHECK (regeneration_status IN ('pending', 'running', 'succeeded', 'failed'));
    ALTER TABLE installs ADD CONSTRAINT installs_status_check
      CHECK (status IN ('pending', 'installing', 'running', 'failed', 'uninstalling'));
    ALTER TABLE compute_configs ADD CONSTRAINT compute_configs_provider_check CHECK (provider IN ('hcloud'));
    ALTER TABLE cloud_credentials ADD CONSTRAINT cloud_credentials_provider_check CHECK (provider IN ('hcloud'));
    ALTER TABLE notifications ADD CONSTRAINT notifications_resource_type_check
      CHECK (resource_type IN ('cluster', 'machine', 'suspension', 'product', 'install', 'token', 'quota'));
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE machines DROP CONSTRAINT machines_status_check;
    ALTER TABLE suspensions DROP CONSTRAINT suspensions_status_check;
    ALTER TABLE products DROP CONSTRAINT products_regeneration_status_check;
    ALTER TABLE installs DROP CONSTRAINT installs_status_check;
    ALTER TABLE compute_configs DROP CONSTRAINT compute_configs_provider_check;
    ALTER TABLE cloud_credentials DROP CONSTRAINT cloud_credentials_provider_check;
    ALTER TABLE notifications DROP CONSTRAINT notifications_resource_type_check;
  `.execute(db);
}

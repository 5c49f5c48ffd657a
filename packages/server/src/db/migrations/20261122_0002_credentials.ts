// Secrets for BYOM cloud credentials and registry credentials, encrypted by the service (AES-256-GCM) before
// they reach the database; the tables hold only ciphertext.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE cloud_credentials (
      id text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces (id),
      name text NOT NULL,
      provider text NOT NULL,
      secret_ciphertext bytea NOT NULL,
      created_at bigint NOT NULL,
      last_used_at bigint
    );
    CREATE INDEX cloud_credentials_workspace ON cloud_credentials (workspace_id, created_at, id);
    CREATE INDEX compute_configs_credential ON compute_configs (cloud_credential_id) WHERE cloud_credential_id IS NOT NULL;
    ALTER TABLE registry_credentials ADD COLUMN username text NOT NULL DEFAULT '';
    ALTER TABLE registry_credentials ADD COLUMN password_ciphertext bytea;
    CREATE INDEX installs_product ON installs (product_id);
    CREATE UNIQUE INDEX clusters_workspace_name ON clusters (workspace_id, name);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP INDEX clusters_workspace_name;
    DROP INDEX installs_product;
    ALTER TABLE registry_credentials DROP COLUMN password_ciphertext;
    ALTER TABLE registry_credentials DROP COLUMN username;
    DROP INDEX compute_configs_credential;
    DROP TABLE cloud_credentials;
  `.execute(db);
}

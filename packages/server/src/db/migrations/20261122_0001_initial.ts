// The initial schema. Every list reads an index on (scope, created_at, id) so keyset pages cost the same
// at any depth; every quota count reads an index on the owner.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE users (
      id text PRIMARY KEY,
      email text NOT NULL UNIQUE,
      plan text NOT NULL CHECK (plan IN ('free', 'pro')),
      created_at bigint NOT NULL
    );
    CREATE TABLE workspaces (
      id text PRIMARY KEY,
      name text NOT NULL,
      icon text,
      owner_id text NOT NULL REFERENCES users (id),
      created_at bigint NOT NULL
    );
    CREATE INDEX workspaces_owner ON workspaces (owner_id, created_at, id);
    CREATE TABLE workspace_members (
      workspace_id text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
      user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      role text NOT NULL CHECK (role IN ('owner', 'member')),
      created_at bigint NOT NULL,
      PRIMARY KEY (workspace_id, user_id)
    );
    CREATE INDEX workspace_members_user ON workspace_members (user_id, workspace_id);
    CREATE TABLE tokens (
      id text PRIMARY KEY,
      user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      kind text NOT NULL CHECK (kind IN ('pat', 'session')),
      name text NOT NULL,
      digest bytea NOT NULL UNIQUE,
      prefix text NOT NULL,
      expires_at bigint,
      last_used_at bigint,
      created_at bigint NOT NULL
    );
    CREATE INDEX tokens_user ON tokens (user_id, created_at, id);
    CREATE TABLE regions (
      id text PRIMARY KEY,
      name text NOT NULL,
      country text NOT NULL,
      created_at bigint NOT NULL
    );
    INSERT INTO regions (id, name, country, created_at) VALUES
      ('fsn1', 'Falkenstein', 'DE', 1732233600),
      ('nbg1', 'Nuremberg', 'DE', 1732233600),
      ('hel1', 'Helsinki', 'FI', 1732233600),
      ('ash', 'Ashburn, VA', 'US', 1732233600),
      ('hil', 'Hillsboro, OR', 'US', 1732233600),
      ('sin', 'Singapore', 'SG', 1732233600);
    CREATE TABLE clusters (
      id text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces (id),
      name text NOT NULL,
      region_id text NOT NULL REFERENCES regions (id),
      kaas_version text NOT NULL,
      status text NOT NULL CHECK (status IN ('PROVISIONING', 'RUNNING', 'ERROR', 'DELETING')),
      status_message text,
      created_at bigint NOT NULL
    );
    CREATE INDEX clusters_workspace ON clusters (workspace_id, created_at, id);
    CREATE TABLE compute_configs (
      id text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces (id),
      name text NOT NULL,
      provider text NOT NULL,
      provider_config jsonb NOT NULL,
      cloud_credential_id text,
      created_at bigint NOT NULL
    );
    CREATE INDEX compute_configs_workspace ON compute_configs (workspace_id, created_at, id);
    CREATE TABLE machines (
      provider_id text PRIMARY KEY,
      cluster_id text NOT NULL REFERENCES clusters (id),
      compute_config_id text NOT NULL REFERENCES compute_configs (id),
      node_name text NOT NULL,
      status text NOT NULL,
      byom boolean NOT NULL,
      server_type text NOT NULL,
      cpu integer NOT NULL,
      memory_bytes bigint NOT NULL,
      created_at bigint NOT NULL
    );
    CREATE INDEX machines_cluster ON machines (cluster_id, created_at, provider_id);
    CREATE INDEX machines_config ON machines (compute_config_id);
    CREATE TABLE suspensions (
      id text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces (id),
      cluster_id text NOT NULL REFERENCES clusters (id),
      provider_id text NOT NULL,
      node_name text NOT NULL,
      reason text NOT NULL CHECK (reason IN ('manual', 'downgrade')),
      status text NOT NULL,
      snapshot_id text,
      created_at bigint NOT NULL,
      expires_at bigint
    );
    CREATE INDEX suspensions_workspace ON suspensions (workspace_id, created_at, id);
    CREATE TABLE registry_credentials (
      id text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces (id),
      name text NOT NULL,
      registry_url text NOT NULL,
      is_active boolean NOT NULL DEFAULT true,
      created_at bigint NOT NULL,
      last_used_at bigint
    );
    CREATE INDEX registry_credentials_workspace ON registry_credentials (workspace_id, created_at, id);
    CREATE TABLE products (
      id text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces (id),
      name text NOT NULL,
      template_id text NOT NULL,
      sources jsonb NOT NULL,
      cluster_ids jsonb NOT NULL,
      stripe_price_ids jsonb NOT NULL,
      settings jsonb NOT NULL,
      regeneration_status text NOT NULL,
      created_at bigint NOT NULL,
      updated_at bigint NOT NULL
    );
    CREATE INDEX products_workspace ON products (workspace_id, created_at, id);
    CREATE TABLE workflows (
      id text PRIMARY KEY,
      kind text NOT NULL,
      subject_id text NOT NULL,
      status text NOT NULL,
      created_at bigint NOT NULL,
      updated_at bigint NOT NULL
    );
    CREATE INDEX workflows_subject ON workflows (subject_id);
    CREATE TABLE installs (
      id text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces (id),
      product_id text NOT NULL REFERENCES products (id),
      region_id text NOT NULL REFERENCES regions (id),
      cluster_id text REFERENCES clusters (id),
      status text NOT NULL,
      workflow_id text NOT NULL REFERENCES workflows (id),
      overrides jsonb NOT NULL,
      status_message text,
      created_at bigint NOT NULL,
      updated_at bigint NOT NULL
    );
    CREATE INDEX installs_workspace ON installs (workspace_id, created_at, id);
    CREATE TABLE idempotency_keys (
      user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      key text NOT NULL,
      operation text NOT NULL,
      request_hash text NOT NULL,
      status_code integer,
      response_body jsonb,
      created_at bigint NOT NULL,
      PRIMARY KEY (user_id, key)
    );
    CREATE TABLE notifications (
      id text PRIMARY KEY,
      user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      type text NOT NULL,
      resource_type text NOT NULL,
      resource_id text NOT NULL,
      title text NOT NULL,
      body text NOT NULL,
      severity text NOT NULL CHECK (severity IN ('info', 'warning', 'critical')),
      read_at bigint,
      created_at bigint NOT NULL
    );
    CREATE INDEX notifications_user ON notifications (user_id, created_at, id);
    CREATE TABLE quota_overrides (
      id serial PRIMARY KEY,
      user_id text REFERENCES users (id) ON DELETE CASCADE,
      workspace_id text REFERENCES workspaces (id) ON DELETE CASCADE,
      metric text NOT NULL,
      "limit" bigint NOT NULL CHECK ("limit" >= 0),
      CHECK ((user_id IS NULL) <> (workspace_id IS NULL))
    );
    CREATE UNIQUE INDEX quota_overrides_user ON quota_overrides (user_id, metric) WHERE user_id IS NOT NULL;
    CREATE UNIQUE INDEX quota_overrides_workspace ON quota_overrides (workspace_id, metric) WHERE workspace_id IS NOT NULL;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP TABLE quota_overrides, notifications, idempotency_keys, installs, workflows, products,
      registry_credentials, suspensions, machines, compute_configs, clusters, regions, tokens,
      workspace_members, workspaces, users;
  `.execute(db);
}

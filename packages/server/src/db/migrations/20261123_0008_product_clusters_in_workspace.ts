// A product's clusters were once checked against every workspace its author belonged to, not the product's own,
// so a product could name another workspace's cluster. The rule now (checked on every write and again by the
// workflows): a product names only clusters of its own workspace. This drops the foreign ids that such a product
// holds; installs already placed stay where they are, and the install and regeneration workflows no longer act
// on a cluster outside the install's workspace.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    UPDATE products p
    SET cluster_ids = (
      SELECT coalesce(jsonb_agg(id.value ORDER BY id.ordinality), '[]'::jsonb)
      FROM jsonb_array_elements_text(p.cluster_ids) WITH ORDINALITY AS id(value, ordinality)
      JOIN clusters c ON c.id = id.value AND c.workspace_id = p.workspace_id
    )
    WHERE EXISTS (
      SELECT 1 FROM jsonb_array_elements_text(p.cluster_ids) AS id(value)
      WHERE NOT EXISTS (SELECT 1 FROM clusters c WHERE c.id = id.value AND c.workspace_id = p.workspace_id)
    );
  `.execute(db);
}

/** The dropped references are not restored: they were never allowed. */
export async function down(_db: Kysely<unknown>): Promise<void> {}

// The Kubernetes versions of the managed control plane become data (they were an enum of the contract): one row per
// minor with the patch release its new clusters run, whether new clusters may use it and when its support ends, so
// an operator adds or retires one with `pnpm admin kaas-versions …` and every process agrees. A cluster keeps the
// release it was created with (`clusters.kaas_release`): its workers install that kubelet and kubeadm.
//
// Every release below is published, and joinable with the kubeadm Kamaji builds with. Kamaji (26.8.2-edge, commit
// ddbabd87ed0e) uploads the tenant's kube-system/kubeadm-config with kubeadm v1.36's uploadconfig phase
// (internal/kubeadm/uploadconfig.go → cmd/kubeadm/app/phases/uploadconfig), which writes a ClusterConfiguration of
// kubeadm.k8s.io/v1beta4 since kubeadm 1.31 (kubernetes/kubernetes#125029). A joining kubeadm decodes it with its
// scheme (cmd/kubeadm/app/util/config/cluster.go): v1beta4 is registered there since 1.28 (kubernetes#118866) and
// has list-shaped extraArgs since 1.29, so v1.29 and later read it; a 1.28 kubeadm fails on the extraArgs (the log
// in clastix/kamaji#650, which raised Kamaji's own minimum). Kamaji documents tenants v1.30 to v1.35 for its 2026
// edge releases (docs/content/reference/versioning.md), strips kubelet-config fields a kubelet before 1.35 refuses
// (internal/kubeadm/uploadconfig.go, tested down to 1.30), and admits up to v1.36 (internal/upgrade/kubeadm_version.go).
//
// Releases and ends of support, from the Kubernetes release pages (kubernetes.io/releases/1.<minor>, generated from
// kubernetes/website data/releases/schedule.yaml):
// - v1.30.14: the line's last patch; end of life 2025-06-28 (schedule.yaml, release 1.30).
// - v1.31.13: github.com/kubernetes/kubernetes/releases/tag/v1.31.13 (2025-09-09); end of life 2025-10-28.
// - v1.32.9: github.com/kubernetes/kubernetes/releases/tag/v1.32.9 (2025-09-09); end of life 2026-02-28.
// - v1.35.9: kubernetes.io/releases/1.35 lists it, released 2026-09-15; end of life 2027-02-28. (Kamaji's own
//   default tenant, api/v1alpha1/tenantcontrolplane_const.go, is v1.35.7 of the same line.)
// - v1.36.4: kubernetes.io/releases/1.36 lists it, released 2026-08-11; end of life 2027-06-28. Kamaji builds with
//   k8s.io/kubernetes v1.36.3 (go.mod) and admits any patch of v1.36.
// v1.30 to v1.32 stay on offer as the contract's enum offered them (v1.31 is the contract's default for a request
// that names none): retiring one is an operator's act, `pnpm admin kaas-versions retire`, no longer a break of /v1.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE kaas_versions (
      id text PRIMARY KEY CHECK (id ~ '^v[0-9]+[.][0-9]+$'),
      release text NOT NULL CHECK (starts_with(release, id || '.') AND release ~ '^v[0-9]+[.][0-9]+[.][0-9]+$'),
      available_for_new_clusters boolean NOT NULL,
      end_of_support_at bigint,
      created_at bigint NOT NULL
    );
    INSERT INTO kaas_versions (id, release, available_for_new_clusters, end_of_support_at, created_at) VALUES
      ('v1.30', 'v1.30.14', true, 1751068800, 1732233600),
      ('v1.31', 'v1.31.13', true, 1761609600, 1732233600),
      ('v1.32', 'v1.32.9', true, 1772236800, 1732233600),
      ('v1.35', 'v1.35.9', true, 1803772800, 1795824000),
      ('v1.36', 'v1.36.4', true, 1814140800, 1795824000);
    ALTER TABLE clusters ADD COLUMN kaas_release text;
    UPDATE clusters SET kaas_release = (SELECT release FROM kaas_versions WHERE kaas_versions.id = clusters.kaas_version);
    ALTER TABLE clusters ALTER COLUMN kaas_release SET NOT NULL;
    ALTER TABLE clusters ADD CONSTRAINT clusters_kaas_version_fkey FOREIGN KEY (kaas_version) REFERENCES kaas_versions (id);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE clusters DROP CONSTRAINT clusters_kaas_version_fkey;
    ALTER TABLE clusters DROP COLUMN kaas_release;
    DROP TABLE kaas_versions;
  `.execute(db);
}

// Opaque ids: a type prefix and a sortable random part (a lower-case ULID), readable in logs and tickets.
import { monotonicFactory } from 'ulid';

// Monotonic within a process: ids made in the same millisecond (a change and its event) still sort in order.
const ulid = monotonicFactory();

export type IdPrefix =
  | 'usr'
  | 'ws'
  | 'cl'
  | 'cc'
  | 'ccr'
  | 'mch'
  | 'sus'
  | 'rc'
  | 'prd'
  | 'src'
  | 'tpl'
  | 'ins'
  | 'rev'
  | 'wf'
  | 'ntf'
  | 'tok'
  | 'qo'
  | 'ss'
  | 'evt'
  | 'inv'
  | 'aud'
  | 'whe'
  | 'whd';

/**
 * The shape of the ids of each table whose rows are listed page by page (the id its keyset orders by; members by
 * their user): a prefix, or a pattern where ids have none, so a cursor is known for its list's
 * (services/pagination.ts).
 */
export const PAGED_TABLE_ID_SHAPE = {
  clusters: 'cl',
  compute_configs: 'cc',
  cloud_credentials: 'ccr',
  suspensions: 'sus',
  registry_credentials: 'rc',
  products: 'prd',
  installs: 'ins',
  install_revisions: 'rev',
  notifications: 'ntf',
  tokens: 'tok',
  events: 'evt',
  audit_events: 'aud',
  webhook_endpoints: 'whe',
  webhook_deliveries: 'whd',
  workspaces: 'ws',
  workspace_members: 'usr',
  workspace_invitations: 'inv',
  // Regions' ids are the provider's location names (`fsn1`): nothing tells one from another list's id.
  regions: null,
  kaas_versions: /^v\d+\.\d+$/,
} as const satisfies Record<string, IdPrefix | RegExp | null>;

/** A table whose rows are listed page by page. */
export type PagedTable = keyof typeof PAGED_TABLE_ID_SHAPE;

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${ulid().toLowerCase()}`;
}

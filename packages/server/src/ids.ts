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

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${ulid().toLowerCase()}`;
}

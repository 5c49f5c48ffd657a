// Opaque ids: a type prefix and a sortable random part (a lower-case ULID), readable in logs and tickets.
import { ulid } from 'ulid';

export type IdPrefix = 'usr' | 'ws' | 'cl' | 'cc' | 'ccr' | 'mch' | 'sus' | 'rc' | 'prd' | 'src' | 'tpl' | 'ins' | 'rev' | 'wf' | 'ntf' | 'tok' | 'qo' | 'ss';

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${ulid().toLowerCase()}`;
}

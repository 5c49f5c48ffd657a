// `platform audit`: the audit log, who changed what and how it ended: the workspace's (admins and the owner), or
// with --mine your own as actor, across workspaces.
import type { Schema } from '@platform/api-types';
import { type Command, InvalidArgumentError } from 'commander';
import { action, example, type PageFlags, UsageError, withPage } from '../context.ts';
import { type Columns, printPage, time } from '../output.ts';

const columns: Columns<Schema<'AuditEvent'>> = [
  ['ID', (e) => e.id],
  ['CREATED', (e) => time(e.created_at)],
  ['ACTOR', (e) => e.actor_id ?? e.actor_type],
  ['OPERATION', (e) => e.operation],
  ['TARGETS', (e) => e.target_ids.join(' ')],
  ['OUTCOME', (e) => (e.status === null ? e.outcome : `${e.outcome} ${e.status}`)],
  ['ADDRESS', (e) => e.client_address ?? '-'],
];

/** A moment: Unix seconds, or an ISO 8601 date or time (`2026-11-24`, `2026-11-24T10:00:00Z`). */
export function moment(value: string): number {
  if (/^\d+$/.test(value)) return Number(value);
  const ms = /^\d{4}-\d{2}-\d{2}/.test(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(ms)) throw new InvalidArgumentError('expected Unix seconds or an ISO 8601 date (2026-11-24, 2026-11-24T10:00:00Z)');
  return Math.floor(ms / 1000);
}

interface AuditFlags extends PageFlags {
  mine?: boolean;
  actor?: string;
  target?: string;
  operation?: string;
  since?: number;
  until?: number;
}

export function registerAudit(program: Command): void {
  const audit = program.command('audit').description('the audit log: who changed what, from where, and how it ended');
  example(audit, 'platform audit list --operation deleteCluster --since 2026-11-01', 'platform audit list --mine --target ins_01jd…');

  example(
    withPage(
      audit
        .command('list')
        .description("list the workspace's audit events (admins and the owner), oldest first; --mine: your own, in every workspace")
        .option('--mine', 'your own events as actor, in every workspace (instead of the workspace’s)')
        .option('--actor <user-id>', 'only events of this user (not with --mine)')
        .option('--target <id>', 'only events naming this id (a cluster, install, workflow, …)')
        .option('--operation <name>', 'only this operation (deleteCluster, workflow.createInstall.failed, …)')
        .option('--since <time>', 'only events at or after this moment (Unix seconds or ISO 8601)', moment)
        .option('--until <time>', 'only events before this moment (Unix seconds or ISO 8601)', moment),
    ).action(
      action(async ({ api, out }, flags: AuditFlags) => {
        const filters = {
          target_id: flags.target,
          operation: flags.operation,
          since: flags.since,
          until: flags.until,
          limit: flags.limit,
          cursor: flags.cursor,
        };
        if (flags.mine && flags.actor !== undefined) throw new UsageError('--actor and --mine do not go together: --mine lists your own events');
        const page = flags.mine
          ? await api.GET('/v1/user/audit_events', { params: { query: filters } })
          : await api.GET('/v1/audit_events', { params: { query: { ...filters, actor_id: flags.actor } } });
        printPage(out, page, columns);
      }),
    ),
    'platform audit list --workspace ws_01jd… --actor usr_01jd… --json',
  );
}

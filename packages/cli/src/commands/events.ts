// `platform events`: the changes to the workspace's objects (clusters running, installs failing, quotas reached…),
// listed, or followed as they happen.
import type { Schema } from '@platform/api-types';
import type { WebhookEventType } from '@platform/client';
import type { Command } from 'commander';
import { action, example, type PageFlags, UsageError, withPage } from '../context.ts';
import { type EventFilters, followEvents, newestEventId, parseEventType } from '../event-feed.ts';
import { type Columns, printPage, time } from '../output.ts';
import { EXIT_INTERRUPTED } from '../wait.ts';

const columns: Columns<Schema<'Event'>> = [
  ['ID', (e) => e.id],
  ['CREATED', (e) => time(e.created_at)],
  ['TYPE', (e) => e.type],
  ['OBJECT', (e) => `${e.object_type} ${e.object_id}`],
];

interface FilterFlags {
  type?: WebhookEventType;
  object?: string;
}

const filtersOf = (flags: FilterFlags): EventFilters => ({ type: flags.type, object_id: flags.object });

function withFilters(command: Command): Command {
  return command
    .option('--type <type>', 'only events of this type, e.g. install.failed', parseEventType)
    .option('--object <id>', 'only events of this object (a cluster, install, … id; a machine’s provider id)');
}

export function registerEvents(program: Command): void {
  const events = program.command('events').description('changes to the workspace’s objects (kept 30 days by default): listed, or followed as they happen');
  example(events, 'platform events list --type install.failed', 'platform events follow');

  example(
    withPage(withFilters(events.command('list').description('list the workspace’s events, oldest first'))).action(
      action(async ({ api, out }, flags: PageFlags & FilterFlags) => {
        const page = await api.GET('/v1/events', { params: { query: { ...filtersOf(flags), limit: flags.limit, cursor: flags.cursor } } });
        printPage(out, page, columns);
      }),
    ),
    'platform events list --object cl_01jd2x8m5r7t9v1w3y5a7c9e1g --json',
  );

  example(
    withFilters(
      events
        .command('follow')
        .description('print the workspace’s new events as they happen, until Ctrl-C (--json: one event per line)')
        .option('--all', 'first the events recorded so far, oldest first')
        .option('--after <event-id>', 'first the events recorded after this one (to resume where a previous run stopped)'),
    ).action(
      action(async ({ api, out, settings }, flags: FilterFlags & { all?: boolean; after?: string }) => {
        if (flags.all && flags.after !== undefined) throw new UsageError('give --all or --after, not both');
        // Ctrl-C ends the feed cleanly: the connection is closed and the exit code says it was interrupted.
        const controller = new AbortController();
        const { signal } = controller;
        const interrupt = () => controller.abort();
        const stopListening = out.io.onInterrupt(interrupt);
        try {
          const filters = filtersOf(flags);
          // By default only what happens from now on: the feed starts after the newest event recorded so far.
          const after = flags.all ? undefined : (flags.after ?? (await newestEventId(api, filters, signal)));
          const workspace = settings.workspace === undefined ? 'your default workspace' : `workspace ${settings.workspace}`;
          out.io.stderr.write(`Following the events of ${workspace} (Ctrl-C to stop).\n`);
          for await (const event of followEvents(api, { filters, after, signal, stderr: out.io.stderr, reconnectMs: out.io.pace?.feedReconnectMs })) {
            // --json: the event as the API returns it, one JSON document per line (NDJSON), for jq and friends.
            out.io.stdout.write(
              out.json ? `${JSON.stringify(event)}\n` : `${time(event.created_at)}  ${event.type.padEnd(30)}  ${event.object_type} ${event.object_id}\n`,
            );
          }
        } catch (error) {
          if (signal.aborted) return EXIT_INTERRUPTED;
          throw error;
        } finally {
          stopListening();
        }
      }),
    ),
    'platform events follow',
    'platform events follow --type install.failed --json | jq .object_id',
    'platform events follow --after evt_01jd2xd7h9k1n3q5s7v9x1z3b5',
  );
}

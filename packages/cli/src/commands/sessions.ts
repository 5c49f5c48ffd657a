// `platform sessions`: the command-line client's sign-ins (session tokens), seen and revoked.
import type { Command } from 'commander';
import { confirm, declined, withYes, type YesFlags } from '../confirm.ts';
import { action, example, type PageFlags, withPage } from '../context.ts';
import { done, printPage, time } from '../output.ts';

export function registerSessions(program: Command): void {
  const sessions = program.command('sessions').description('your sign-ins of this client: where and when they were last used');
  example(sessions, 'platform sessions list', 'platform sessions revoke-others --yes');

  example(
    withPage(sessions.command('list').description('list your sessions (the current one is marked *)')).action(
      action(async ({ api, out }, flags: PageFlags) => {
        const page = await api.GET('/v1/user/sessions', { params: { query: { limit: flags.limit, cursor: flags.cursor } } });
        printPage(out, page, [
          ['ID', (s) => (s.current ? `${s.id} *` : s.id)],
          ['CLIENT', (s) => s.name],
          ['CREATED', (s) => time(s.created_at)],
          ['LAST USED', (s) => time(s.last_used_at)],
          ['ADDRESS', (s) => s.last_address ?? ''],
          ['USER AGENT', (s) => s.user_agent ?? ''],
        ]);
      }),
    ),
    'platform sessions list',
  );

  example(
    withYes(sessions.command('revoke <id>').description('end a session at once (asks first unless --yes)')).action(
      action(async ({ api, out }, id: string, flags: YesFlags) => {
        const what = `Revoke session ${id}`;
        if (!(await confirm(out.io, what, flags))) return declined(out.io, what);
        await api.DELETE('/v1/user/sessions/{id}', { params: { path: { id } } });
        done(out, `Revoked session ${id}`);
      }),
    ),
    'platform sessions revoke tok_01jd2xf9k1n3q5s7v9x1z3b5d7 --yes',
  );

  example(
    withYes(sessions.command('revoke-others').description('end every session but this one, e.g. after losing a laptop (asks first unless --yes)')).action(
      action(async ({ api, out }, flags: YesFlags) => {
        const what = 'Revoke every other session';
        if (!(await confirm(out.io, what, flags))) return declined(out.io, what);
        const { revoked } = await api.POST('/v1/user/sessions/revoke_others', {});
        done(out, `Revoked ${revoked} other session${revoked === 1 ? '' : 's'}`, { revoked });
      }),
    ),
    'platform sessions revoke-others --yes',
  );
}

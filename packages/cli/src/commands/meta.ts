// The commands about the CLI itself, as gh and stripe have them: who the token belongs to (`whoami`), where each
// setting comes from (`config`) and shell completion scripts (`completion bash|zsh|fish`), written from the
// program's own command tree.
import type { Command } from 'commander';
import { configPath, DEFAULT_API_URL, type GlobalFlags, readConfig } from '../config.ts';
import { action, example, ioOf, UsageError } from '../context.ts';
import type { Io } from '../io.ts';
import { json, time } from '../output.ts';

/** A token shown in part: enough to tell tokens apart, never enough to use one. */
const masked = (token: string) => `${token.slice(0, token.startsWith('svc_pat_') ? 12 : 4)}…`;

interface SettingSource {
  setting: string;
  value: string | null;
  source: string;
}

/** Each setting in force and where it came from: flag > environment > config file > default. */
function sources(flags: GlobalFlags, env: Io['env']): SettingSource[] {
  const stored = readConfig(env);
  const entries: [setting: string, flag: string, flagValue: string | undefined, variable: string, storedValue: string | undefined, fallback?: string][] = [
    ['api_url', '--api-url', flags.apiUrl, 'PLATFORM_API_URL', stored.api_url, DEFAULT_API_URL],
    ['token', '--token', flags.token, 'PLATFORM_TOKEN', stored.token],
    ['workspace', '--workspace', flags.workspace, 'PLATFORM_WORKSPACE', stored.workspace],
  ];
  return entries.map(([setting, flag, flagValue, variable, storedValue, fallback]) => {
    const [value, source] = flagValue
      ? [flagValue, flag]
      : env[variable]
        ? [env[variable], `environment (${variable})`]
        : storedValue
          ? [storedValue, configPath(env)]
          : fallback
            ? [fallback, 'default']
            : [null, 'not set'];
    return { setting, value: value && setting === 'token' ? masked(value) : (value ?? null), source };
  });
}

/** What completion offers after a command path: its subcommands, then its own flags (long names). */
interface Completions {
  commands: string[];
  flags: string[];
}

/** Every command path of the program, top level first, with what may follow it. */
function commandTree(program: Command): Map<string, Completions> {
  const tree = new Map<string, Completions>();
  const walk = (command: Command, path: string) => {
    // The program's own options (and --help) are offered everywhere, so only the commands' are listed here.
    const flags = command === program ? ['--version'] : command.options.flatMap((option) => (option.long ? [option.long] : []));
    tree.set(path, { commands: command.commands.map((sub) => sub.name()), flags });
    for (const sub of command.commands) walk(sub, path ? `${path} ${sub.name()}` : sub.name());
  };
  walk(program, '');
  return tree;
}

function completionScript(shell: string, program: Command): string {
  const tree = commandTree(program);
  // The program's own options are taken after any command.
  const global = [...program.options.flatMap((option) => (option.long ? [option.long] : [])), '--help'];
  if (shell === 'bash' || shell === 'zsh') {
    const cases = [...tree].map(([path, { commands, flags }]) => `    "${path}") words="${[...commands, ...flags].join(' ')}" ;;`).join('\n');
    const body = `# platform completion for ${shell}: add \`source <(platform completion ${shell})\` to your ~/.${shell}rc
# (in the workspace, alias platform='pnpm -s platform' first)
_platform_words() {
  case "$1" in
${cases}
    *) return 1 ;;
  esac
}
_platform() {
  local path="" word words=""
  # The command path: the words that name commands; arguments and flags in between are passed over.
  for word in "\${COMP_WORDS[@]:1:COMP_CWORD-1}"; do
    case "$word" in -*) ;; *) _platform_words "\${path:+$path }$word" && path="\${path:+$path }$word" ;; esac
  done
  _platform_words "$path"
  COMPREPLY=( $(compgen -W "$words ${global.join(' ')}" -- "\${COMP_WORDS[COMP_CWORD]}") )
}
complete -F _platform platform
`;
    return shell === 'zsh' ? `autoload -U +X bashcompinit && bashcompinit\n${body}` : body;
  }
  // fish: subcommands offered after their parent's word, flags after their command's, the program's anywhere.
  const lines = ['# platform completion for fish: platform completion fish > ~/.config/fish/completions/platform.fish', 'complete -c platform -f'];
  for (const flag of global) lines.push(`complete -c platform -l ${flag.slice(2)}`);
  for (const [path, { commands, flags }] of tree) {
    const condition = path === '' ? '__fish_use_subcommand' : `__fish_seen_subcommand_from ${path.split(' ').at(-1)}`;
    for (const name of commands) lines.push(`complete -c platform -n '${condition}' -a ${name}`);
    if (path !== '') for (const flag of flags) lines.push(`complete -c platform -n '${condition}' -l ${flag.slice(2)}`);
  }
  return `${lines.join('\n')}\n`;
}

export function registerMeta(program: Command): void {
  example(
    program
      .command('whoami')
      .description('show who you are signed in as: user, token kind, scopes, workspace restriction, the workspace commands act in')
      .action(
        action(async ({ api, out }) => {
          const me = await api.GET('/v1/user', {});
          if (out.json) return json(out, me);
          const restriction = me.token.workspace_ids === null ? 'every workspace of yours' : me.token.workspace_ids.join(', ');
          const lines: [string, string][] = [
            ['user', `${me.email} (${me.id}, plan ${me.plan})`],
            ['token', `${me.token.kind}${me.token.name ? ` "${me.token.name}"` : ''}${me.token.id ? ` (${me.token.id})` : ''}`],
            ['scopes', me.token.scopes.join(' ')],
            ['workspaces', restriction],
            ['workspace', me.workspace_id ?? '- (none: set one with platform workspaces use <id>)'],
            ['expires', me.token.expires_at === null ? 'never' : time(me.token.expires_at)],
          ];
          for (const [name, value] of lines) out.io.stdout.write(`${name.padEnd(10)}  ${value}\n`);
        }),
      ),
    'platform whoami',
    'platform whoami --json | jq -r .token.scopes[]',
  );

  example(
    program
      .command('config')
      .description('show each setting in force (API address, token, workspace) and where it comes from')
      .action((_options: unknown, command: Command) => {
        const out = { json: command.optsWithGlobals<{ json?: boolean }>().json === true, io: ioOf(command) };
        const rows = sources(command.optsWithGlobals<GlobalFlags>(), out.io.env);
        if (out.json) return json(out, rows);
        const width = Math.max(...rows.map((row) => row.setting.length));
        for (const row of rows) out.io.stdout.write(`${row.setting.padEnd(width)}  ${row.value ?? '-'}  (${row.source})\n`);
      }),
    'platform config',
  );

  example(
    program
      .command('completion <shell>')
      .description('print a completion script for bash, zsh or fish')
      .action((shell: string) => {
        if (!['bash', 'zsh', 'fish'].includes(shell)) throw new UsageError(`completion: unknown shell "${shell}" (bash, zsh or fish)`);
        ioOf(program).stdout.write(completionScript(shell, program));
      }),
    'source <(platform completion bash)',
  );
}

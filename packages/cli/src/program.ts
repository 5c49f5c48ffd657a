// The `platform` program: global options, every command group, and how failures become exit codes.
// Exit codes: 0 success, 1 error (the service's message and suggestion on stderr), 2 usage error,
// 3 a workflow awaited with --wait failed, 4 --wait timed out, 130 interrupted.
import { createRequire } from 'node:module';
import { Command, CommanderError } from 'commander';
import { registerApi } from './commands/api.ts';
import { registerAudit } from './commands/audit.ts';
import { registerAuth } from './commands/auth.ts';
import { registerClusters } from './commands/clusters.ts';
import { registerCompute } from './commands/compute.ts';
import { registerEvents } from './commands/events.ts';
import { registerInstalls } from './commands/installs.ts';
import { registerMeta } from './commands/meta.ts';
import { registerNotifications } from './commands/notifications.ts';
import { registerProducts } from './commands/products.ts';
import { registerQuotas } from './commands/quotas.ts';
import { registerRegions } from './commands/regions.ts';
import { registerRegistry } from './commands/registry.ts';
import { registerSessions } from './commands/sessions.ts';
import { registerTokens } from './commands/tokens.ts';
import { registerWebhooks } from './commands/webhooks.ts';
import { registerWorkspaces } from './commands/workspaces.ts';
import { bindIo, UsageError } from './context.ts';
import type { Io } from './io.ts';
import { printError } from './output.ts';
import { EXIT_ERROR, EXIT_USAGE } from './wait.ts';

const { version } = createRequire(import.meta.url)('../package.json') as { version: string };

/** commander's unknown-command error and its suggestion on one line; where it has none, where to look. */
function oneLine(text: string): string {
  const joined = text.replace(/\n\(Did you mean (.*)\?\)/, ' (did you mean $1?)');
  return joined === text && text.startsWith('error: unknown command') ? text.replace(/\n$/, ' (see platform --help)\n') : joined;
}

/** The program, writing to and reading from `io` (the process's own in main.ts; captured ones in tests). */
export function buildProgram(io: Io): Command {
  const program = new Command('platform')
    .description('Manage clusters, compute, products, installs and webhooks of the Platform Management API.')
    .option('--api-url <url>', 'API address (env PLATFORM_API_URL; default http://127.0.0.1:8080)')
    .option('--token <token>', 'bearer token (env PLATFORM_TOKEN; default: the one `platform login` saved)')
    .option('--workspace <id>', 'workspace to act in (env PLATFORM_WORKSPACE; default: `platform workspaces use`)')
    .option('--json', 'print the JSON response instead of a table')
    // A mistyped command gets one line naming the closest commands (commander's suggestion), not the whole help.
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
      // commander's own rule: the terminal's width, else 80.
      getOutHelpWidth: () => (io.stdout.isTTY && io.stdout.columns) || 80,
      getErrHelpWidth: () => 80,
      outputError: (text, write) => write(oneLine(text)),
    })
    // Usage errors throw instead of exiting, so main() maps them to exit code 2; subcommands inherit this.
    .exitOverride();
  program.addHelpText(
    'after',
    '\n  --version             print the version of platform\n\nExamples:\n  $ platform login\n  $ platform clusters list --json\n  $ platform installs logs ins_01jd… --tail 100\n\nOutput: on a terminal, tables fit its width (long cells end in …); piped, one tab-separated line per row, no\nheader, nothing cut; --json prints the API’s JSON as it is.\n\nExit codes: 0 ok, 1 error, 2 usage, 3 workflow failed, 4 timeout, 130 interrupted.\n',
  );
  registerAuth(program);
  registerWorkspaces(program);
  registerRegions(program);
  registerClusters(program);
  registerCompute(program);
  registerRegistry(program);
  registerProducts(program);
  registerInstalls(program);
  registerTokens(program);
  registerSessions(program);
  registerQuotas(program);
  registerNotifications(program);
  registerEvents(program);
  registerAudit(program);
  registerWebhooks(program);
  registerApi(program);
  registerMeta(program);
  bindIo(program, io);
  return program;
}

/** Runs `platform` with `argv` (node's: the program's arguments from the third on); the exit code lands in `io.exitCode`. */
export async function run(argv: string[], io: Io): Promise<void> {
  // `platform --version` as the only argument: commander's own version option would also take the `--version` of
  // `clusters create` (the Kubernetes version) wherever it stands.
  if (argv.length === 3 && argv[2] === '--version') {
    io.stdout.write(`${version}\n`);
    return;
  }
  try {
    await buildProgram(io).parseAsync(argv);
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help also arrives here, with exit code 0; commander already printed the message.
      io.exitCode = error.exitCode === 0 ? 0 : EXIT_USAGE;
      return;
    }
    if (error instanceof UsageError) {
      io.stderr.write(`error: ${error.message}\n`);
      io.exitCode = EXIT_USAGE;
      return;
    }
    printError(io, error);
    io.exitCode = EXIT_ERROR;
  }
}

// `pnpm admin`: what the API deliberately cannot do (there is no public sign-up). Uses the same database as
// the server: DATABASE_URL, or the embedded one under DATA_DIR (started here when the server is not running).
import { parseArgs } from 'node:util';
import { systemClock } from './clock.ts';
import { ConfigError, databaseLocation, loadConfig } from './config.ts';
import { type Connection, connect, openDatabase, runningEmbeddedUrl } from './db/connect.ts';
import { applyMigrations } from './db/migrate.ts';
import type { Plan } from './db/schema.ts';
import { DEMO_EMAIL } from './db/seed.ts';
import { ApiError } from './errors.ts';
import { listKaasVersions, setKaasVersion, setKaasVersionAvailability } from './resources/kaas-versions.ts';
import { setQuotaOverride } from './resources/quotas.ts';
import { createToken } from './resources/tokens.ts';
import { anyUser, createUser, findUserByEmail, setPlan, userExists } from './resources/users.ts';
import { workspaceExists } from './resources/workspaces.ts';
import { isMetric } from './services/quotas.ts';

const USAGE = `Usage:
  pnpm admin --help
  pnpm admin create-user --email <email> [--plan free|pro]
  pnpm admin demo-token
  pnpm admin set-plan --user <user id> --plan free|pro
  pnpm admin set-override (--user <user id> | --workspace <workspace id>) --metric <metric> --limit <n>
  pnpm admin kaas-versions
  pnpm admin set-kaas-version --version v<major>.<minor> --release v<major>.<minor>.<patch> [--end-of-support <YYYY-MM-DD>]
  pnpm admin retire-kaas-version --version <version>
  pnpm admin offer-kaas-version --version <version>`;

class UsageError extends Error {}

const PLANS: readonly Plan[] = ['free', 'pro'];

function plan(value: string | undefined, fallback?: Plan): Plan {
  const chosen = value ?? fallback;
  if (!chosen || !PLANS.includes(chosen as Plan)) throw new UsageError(`--plan must be free or pro`);
  return chosen as Plan;
}

function required(values: Record<string, string | undefined>, name: string): string {
  const value = values[name];
  if (!value) throw new UsageError(`--${name} is required`);
  return value;
}

/**
 * The server's embedded PostgreSQL (of this DATA_DIR: its port is read from the data folder) may already be
 * running; then use it instead of starting one.
 */
async function open(): Promise<Connection> {
  const config = loadConfig();
  const url = config.databaseUrl ? undefined : await runningEmbeddedUrl(config.dataDir);
  if (url) {
    const running = openDatabase(url, 1);
    try {
      await anyUser(running.db);
      return running;
    } catch {
      await running.close();
    }
  }
  const connection = await connect(databaseLocation(config), config.dataDir);
  await applyMigrations(connection);
  return connection;
}

async function run(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const { values } = parseArgs({
    args: rest,
    options: {
      email: { type: 'string' },
      plan: { type: 'string' },
      user: { type: 'string' },
      workspace: { type: 'string' },
      metric: { type: 'string' },
      limit: { type: 'string' },
      version: { type: 'string' },
      release: { type: 'string' },
      'end-of-support': { type: 'string' },
    },
    strict: true,
  });
  // Check every argument before touching the database.
  let action: (connection: Connection) => Promise<void>;
  switch (command) {
    case 'create-user': {
      const email = required(values, 'email');
      if (!/^[^@\s]+@[^@\s]+$/.test(email)) throw new UsageError('--email must be an email address');
      const chosen = plan(values.plan, 'free');
      action = async ({ db }) => {
        const exists = await findUserByEmail(db, email);
        if (exists) throw new Error(`a user with email ${email} exists already (${exists.id})`);
        const user = await createUser(db, systemClock, email, chosen);
        process.stdout.write(`${JSON.stringify({ user_id: user.userId, token: user.token })}\n`);
      };
      break;
    }
    case 'demo-token': {
      // Tokens are stored as digests, so the one printed at the first start cannot be read back: this mints a
      // new one for the demo user (whoever can run this can write the database anyway), leaving others valid.
      action = async ({ db }) => {
        const demo = await findUserByEmail(db, DEMO_EMAIL);
        if (!demo) throw new Error(`no demo user (${DEMO_EMAIL}) in this database: the first start of an empty database creates it`);
        const { secret } = await createToken(db, systemClock, { userId: demo.id, kind: 'pat', name: 'demo-token', expiresAt: null });
        process.stdout.write(`${JSON.stringify({ user_id: demo.id, email: DEMO_EMAIL, token: secret })}\n`);
      };
      break;
    }
    case 'set-plan': {
      const user = required(values, 'user');
      const chosen = plan(values.plan);
      action = async ({ db }) => {
        if (!(await setPlan(db, user, chosen))) throw new Error(`no user ${user}`);
        process.stdout.write(`${JSON.stringify({ user_id: user, plan: chosen })}\n`);
      };
      break;
    }
    case 'set-override': {
      if ((values.user === undefined) === (values.workspace === undefined)) throw new UsageError('give exactly one of --user and --workspace');
      const metric = required(values, 'metric');
      if (!isMetric(metric)) throw new UsageError(`--metric must be one of kaas/clusters, compute/machines, compute/cpu, compute/memory, compute/provisioning`);
      const limit = Number(required(values, 'limit'));
      if (!Number.isSafeInteger(limit) || limit < 0) throw new UsageError('--limit must be a whole number, 0 or more');
      action = async ({ db }) => {
        const scope = values.user ? { user_id: values.user, workspace_id: null } : { user_id: null, workspace_id: values.workspace! };
        const exists = scope.user_id !== null ? await userExists(db, scope.user_id) : await workspaceExists(db, scope.workspace_id);
        if (!exists) throw new Error(`no ${values.user ? 'user' : 'workspace'} ${scope.user_id ?? scope.workspace_id}`);
        await setQuotaOverride(db, scope, metric, limit);
        process.stdout.write(`${JSON.stringify({ ...scope, metric, limit })}\n`);
      };
      break;
    }
    case 'kaas-versions': {
      // One JSON line per version, as GET /v1/kaas/versions lists them.
      action = async ({ db }) => {
        let cursor: string | undefined;
        do {
          const page = await listKaasVersions(db, { cursor, limit: 100 });
          for (const version of page.data) process.stdout.write(`${JSON.stringify(version)}\n`);
          cursor = page.pagination.has_more ? page.pagination.cursor : undefined;
        } while (cursor);
      };
      break;
    }
    case 'set-kaas-version': {
      const id = required(values, 'version');
      const release = required(values, 'release');
      const endOfSupport = values['end-of-support'];
      const endOfSupportAt = endOfSupport === undefined ? null : Date.parse(`${endOfSupport}T00:00:00Z`) / 1000;
      if (endOfSupportAt !== null && !(/^\d{4}-\d{2}-\d{2}$/.test(endOfSupport!) && Number.isSafeInteger(endOfSupportAt)))
        throw new UsageError('--end-of-support must be a date, YYYY-MM-DD');
      action = async ({ db }) => {
        process.stdout.write(`${JSON.stringify(await setKaasVersion(db, { id, release, end_of_support_at: endOfSupportAt }, systemClock.now()))}\n`);
      };
      break;
    }
    case 'retire-kaas-version':
    case 'offer-kaas-version': {
      // Retired: no new cluster may use it; its clusters keep running and their machines keep joining.
      const id = required(values, 'version');
      action = async ({ db }) => {
        process.stdout.write(`${JSON.stringify(await setKaasVersionAvailability(db, id, command === 'offer-kaas-version'))}\n`);
      };
      break;
    }
    default:
      throw new UsageError(command ? `unknown command ${command}` : 'a command is required');
  }
  const connection = await open();
  try {
    await action(connection);
  } finally {
    await connection.close();
  }
}

run(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
    process.stderr.write(`${(error as Error).message}\n${USAGE}\n`);
    process.exit(2);
  }
  // A refusal of a resource (an unknown version) is said with its suggestion, as the API would say it.
  const suggestion = error instanceof ApiError && error.suggestion ? ` ${error.suggestion}` : '';
  process.stderr.write(`admin: ${error instanceof ConfigError ? error.message : (error as Error).message}${suggestion}\n`);
  process.exit(1);
});

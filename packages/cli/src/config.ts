// Where the CLI's settings come from: flags > environment > the config file. The file holds only what the
// user chose to keep (`login`'s session token, `workspaces use`, an API URL), never a token from the environment.
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import envPaths from 'env-paths';

export const DEFAULT_API_URL = 'http://127.0.0.1:8080';

/** What the config file may hold. */
export interface StoredConfig {
  api_url?: string;
  token?: string;
  workspace?: string;
}

/** The settings in force for this run. */
export interface Settings {
  apiUrl: string;
  /** Where `apiUrl` came from, as the user would name it: `--api-url`, `PLATFORM_API_URL`, the config file's `api_url`. */
  apiUrlFrom: string;
  token: string | undefined;
  workspace: string | undefined;
}

export interface GlobalFlags {
  apiUrl?: string;
  token?: string;
  workspace?: string;
}

type Env = Record<string, string | undefined>;

/**
 * `<config dir>/platform`, as env-paths places it. env-paths reads the process's environment; on Linux its rule
 * (XDG_CONFIG_HOME, else ~/.config) is applied to the run's own (tests redirect it).
 */
export function configDir(env: Env): string {
  if (process.platform === 'darwin' || process.platform === 'win32') return envPaths('platform', { suffix: '' }).config;
  return join(env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'platform');
}

export function configPath(env: Env): string {
  return join(configDir(env), 'config.json');
}

export function readConfig(env: Env): StoredConfig {
  let text: string;
  try {
    text = readFileSync(configPath(env), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw error;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`${configPath(env)} is not valid JSON: fix or delete it (then run \`platform login\` again)`);
  }
  if (typeof parsed !== 'object' || parsed === null) return {};
  const record = parsed as Record<string, unknown>;
  const stored: StoredConfig = {};
  for (const key of ['api_url', 'token', 'workspace'] as const) {
    const value = record[key];
    if (typeof value === 'string') stored[key] = value;
  }
  return stored;
}

/** Merges `changes` into the file (undefined removes a key). The file holds a secret: 0600 in a 0700 directory. */
export function updateConfig(env: Env, changes: Partial<Record<keyof StoredConfig, string | undefined>>): void {
  const next: StoredConfig = { ...readConfig(env) };
  for (const [key, value] of Object.entries(changes) as [keyof StoredConfig, string | undefined][]) {
    if (value === undefined) delete next[key];
    else next[key] = value;
  }
  const dir = configDir(env);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700); // mkdir's mode is masked by the umask and ignored for an existing directory
  // Written aside and renamed, so a crash never leaves half a file; created 0600 so the token is never readable.
  const temp = `${configPath(env)}.${process.pid}.tmp`;
  writeFileSync(temp, `${JSON.stringify(next, null, 2)}\n`, { mode: 0o600 });
  chmodSync(temp, 0o600);
  renameSync(temp, configPath(env));
}

export function resolveSettings(flags: GlobalFlags, env: Env, stored: StoredConfig = readConfig(env)): Settings {
  const pick = (...values: (string | undefined)[]) => values.find((value) => value !== undefined && value !== '');
  const apiUrl = pick(flags.apiUrl, env.PLATFORM_API_URL, stored.api_url) ?? DEFAULT_API_URL;
  const apiUrlFrom =
    apiUrl === pick(flags.apiUrl)
      ? '--api-url'
      : apiUrl === pick(env.PLATFORM_API_URL)
        ? 'PLATFORM_API_URL'
        : apiUrl === pick(stored.api_url)
          ? `api_url in ${configPath(env)}`
          : 'the default';
  return {
    apiUrl,
    apiUrlFrom,
    token: pick(flags.token, env.PLATFORM_TOKEN, stored.token),
    workspace: pick(flags.workspace, env.PLATFORM_WORKSPACE, stored.workspace),
  };
}

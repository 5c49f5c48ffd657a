// Environment → typed configuration, validated once at start-up. A bad variable stops start-up with one
// clear line naming it (ConfigError), never a stack trace.
export class ConfigError extends Error {}

export type Role = 'all' | 'api' | 'worker';

export interface Config {
  host: string;
  port: number;
  /** Unset: an embedded PostgreSQL with its data under `dataDir`. */
  databaseUrl: string | undefined;
  dataDir: string;
  logLevel: string;
  /** Validate every response against the contract (always on in tests). */
  validateResponses: boolean;
  /** How long SIGTERM waits for in-flight requests before closing their connections. */
  shutdownGraceMs: number;
  /** Largest request body accepted, in bytes. */
  bodyLimitBytes: number;
  jwt: { jwksUrl: string; issuer: string; audience: string; algorithms: string[] } | undefined;
  /** Seals write-only secrets; unset: a key generated once and kept in `dataDir` (see secretsKey). */
  secretsKey: Buffer | undefined;
}

type Env = Record<string, string | undefined>;

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

function databaseUrl(env: Env): string | undefined {
  const raw = env.DATABASE_URL;
  if (raw === undefined || raw === '') return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`DATABASE_URL must be a postgres:// URL, got "${raw}"`);
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new ConfigError(`DATABASE_URL must be a postgres:// URL, got "${raw}"`);
  }
  return raw;
}

function jwt(env: Env): Config['jwt'] {
  const jwksUrl = env.JWT_JWKS_URL;
  if (!jwksUrl) return undefined;
  for (const name of ['JWT_ISSUER', 'JWT_AUDIENCE'] as const) {
    if (!env[name]) throw new ConfigError(`${name} must be set when JWT_JWKS_URL is set`);
  }
  try {
    new URL(jwksUrl);
  } catch {
    throw new ConfigError(`JWT_JWKS_URL must be a URL, got "${jwksUrl}"`);
  }
  const algorithms = (env.JWT_ALGORITHMS ?? 'RS256,ES256').split(',').map((a) => a.trim()).filter(Boolean);
  if (algorithms.some((a) => a === 'none' || a.startsWith('HS'))) {
    throw new ConfigError('JWT_ALGORITHMS must name asymmetric algorithms only (e.g. RS256,ES256)');
  }
  return { jwksUrl, issuer: env.JWT_ISSUER!, audience: env.JWT_AUDIENCE!, algorithms };
}

function secretsKey(env: Env): Buffer | undefined {
  const raw = env.SECRETS_KEY;
  if (raw === undefined || raw === '') return undefined;
  const key = Buffer.from(raw, 'base64');
  if (key.length !== 32) throw new ConfigError('SECRETS_KEY must be 32 bytes in base64 (e.g. `openssl rand -base64 32`)');
  return key;
}

export function loadConfig(env: Env = process.env): Config {
  return {
    host: env.HOST || '127.0.0.1',
    port: integer(env, 'PORT', 8080, 0, 65535),
    databaseUrl: databaseUrl(env),
    dataDir: env.DATA_DIR || '.data',
    logLevel: env.LOG_LEVEL || 'info',
    validateResponses: boolean(env, 'VALIDATE_RESPONSES', false),
    bodyLimitBytes: integer(env, 'BODY_LIMIT_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    shutdownGraceMs: integer(env, 'SHUTDOWN_GRACE_MS', 10_000, 0, 600_000),
    jwt: jwt(env),
    secretsKey: secretsKey(env),
  };
}

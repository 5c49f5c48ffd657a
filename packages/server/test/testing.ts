// What the workspace's other tests, benchmarks and scripts use of the server, as one entry point
// (`@platform/server/testing`): they reach the server through this seam, never by a relative path into its files.
export { systemClock } from '../src/clock.ts';
export { loadConfig } from '../src/config.ts';
export { type Connection, connect, openDatabase } from '../src/db/connect.ts';
export { migrateToLatest } from '../src/db/migrate.ts';
export { createUser, seedSampleResources } from '../src/db/seed.ts';
export { ENGINE_STOP_TIMEOUT_MS } from '../src/engine/engine.ts';
export { EXPOSED_HEADERS } from '../src/http/cors.ts';
export { MAX_JSON_DEPTH } from '../src/http/input-checks.ts';
export { newId } from '../src/ids.ts';
export { recordEvent } from '../src/resources/events.ts';
export { createToken } from '../src/resources/tokens.ts';
export { createRuntime } from '../src/runtime.ts';
export { encodeCursor } from '../src/services/pagination.ts';
export { BEYOND_THE_REGISTRIES, IPV4_SPECIAL_PURPOSE, IPV6_SPECIAL_PURPOSE } from '../src/services/special-purpose-addresses.ts';
export { blockRange } from '../src/services/ssrf.ts';
export { buildWorld, idFor, type World } from './fixtures.ts';
export { freePort } from './global-setup.ts';
export { deprecatedContract } from './support/deprecated-contract.ts';
export * from './support.ts';

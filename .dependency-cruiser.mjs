// The server's layers and the packages' boundaries, checked by `pnpm lint` (architecture.md draws the same):
//   http → operations → resources / services → db / workflows → providers;   errors.ts is used by every layer.
// Nothing imports upward, and no package reaches into another package's files by a relative path: packages
// use each other through their names and exports.
const server = '^packages/server/src/';

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    {
      name: 'no-cross-package-relative',
      comment: 'Use the other package through its name and exports, not a relative path into its files.',
      severity: 'error',
      from: { path: '^(packages/[^/]+)/' },
      to: { path: '^packages/[^/]+/', pathNot: ['^$1/', 'node_modules'] },
    },
    {
      name: 'no-relative-path-into-packages',
      comment: "The workspace's own tests and scripts use a package through its name and exports (the server: @platform/server/testing).",
      severity: 'error',
      from: { path: '^(test|scripts)/' },
      to: { path: '^packages/[^/]+/(src|test)/', dependencyTypes: ['local'] },
    },
    {
      name: 'no-upward-from-operations',
      comment: 'Handlers are called by http/; they do not know Koa or the app.',
      severity: 'error',
      from: { path: `${server}operations/` },
      to: { path: [`${server}http/`, `${server}app\\.ts$`, `${server}main\\.ts$`] },
    },
    {
      name: 'no-upward-from-resources-and-services',
      comment: 'Resources and services hold the rules; they never reach back to handlers or the HTTP binding.',
      severity: 'error',
      from: { path: [`${server}resources/`, `${server}services/`] },
      to: { path: [`${server}http/`, `${server}operations/`, `${server}app\\.ts$`, `${server}main\\.ts$`] },
    },
    {
      name: 'no-upward-from-workflows',
      comment: 'Workflows call resources and providers; they are started by handlers, never the reverse.',
      severity: 'error',
      from: { path: `${server}workflows/` },
      to: { path: [`${server}http/`, `${server}operations/`, `${server}app\\.ts$`, `${server}main\\.ts$`] },
    },
    {
      name: 'db-is-a-leaf',
      comment: 'The database layer (connection, schema, migrations) depends on nothing above it.',
      severity: 'error',
      from: { path: `${server}db/`, pathNot: `${server}db/(migrate-cli|seed)\\.ts$` },
      to: { path: [`${server}http/`, `${server}operations/`, `${server}resources/`, `${server}services/`, `${server}workflows/`, `${server}providers/`] },
    },
    {
      name: 'providers-are-leaves',
      comment: 'Drivers of outside systems know nothing of our tables, rules or handlers; they are handed what they need.',
      severity: 'error',
      // The composition root (providers/index.ts) wires drivers to the database; the sealed-secret box is a pure
      // crypto helper (AES-256-GCM), no rule and no table.
      from: { path: `${server}providers/`, pathNot: `${server}providers/index\\.ts$` },
      to: {
        path: [`${server}http/`, `${server}operations/`, `${server}resources/`, `${server}services/`, `${server}workflows/`, `${server}db/`],
        pathNot: `${server}services/secrets\\.ts$`,
      },
    },
    {
      name: 'provider-chosen-in-the-composition-root',
      comment: 'Only the composition root (app.ts, main.ts, workflows/runtime.ts) and tests pick a driver implementation.',
      severity: 'error',
      from: { path: server, pathNot: [`${server}(app|main|admin)\\.ts$`, `${server}workflows/runtime\\.ts$`, `${server}providers/`] },
      to: { path: `${server}providers/(simulated|hetzner|kubernetes)` },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: ['node_modules', 'generated/', 'dist/'] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.mjs', '.json'] },
  },
};

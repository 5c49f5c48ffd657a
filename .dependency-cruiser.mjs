// The server's layers and the packages' boundaries, checked by `pnpm lint` (packages/server/README.md draws the same):
//   http → operations → resources / services → db / engine → providers, with workflows/ (the kinds) and jobs/ (the
//   workers' other jobs) above the resources and below the handlers;   errors.ts is used by every layer.
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
    // The server's layers, one rule per row of packages/server/README.md's table ("May import").
    {
      name: 'http-imports-handlers-services-and-two-resources',
      comment:
        'http/ imports operations/, services/, resources/tokens.ts (the token look-up) and resources/audit-events.ts (recording a request); of db/, the types and the outage test; no workflow, job, engine or driver.',
      severity: 'error',
      from: { path: `${server}http/` },
      to: {
        path: [
          `${server}resources/`,
          `${server}db/`,
          `${server}(engine|workflows|jobs)/`,
          `${server}providers/`,
          `${server}(app|main|admin|start-up|runtime)\\.ts$`,
        ],
        pathNot: [`${server}resources/(tokens|audit-events)\\.ts$`, `${server}db/(schema|outage)\\.ts$`, `${server}providers/types\\.ts$`],
      },
    },
    {
      name: 'operations-import-resources-and-services',
      comment: 'Handlers are called by http/ (they do not know Koa or the app) and call resources and services; anything else only as types.',
      severity: 'error',
      from: { path: `${server}operations/` },
      to: { path: [`${server}http/`, `${server}(app|main|admin|start-up|runtime)\\.ts$`] },
    },
    {
      name: 'operations-take-only-types-from-below-resources',
      comment: 'Handlers reach the database, the workflows and the drivers through resources and services only.',
      severity: 'error',
      from: { path: `${server}operations/` },
      to: { path: [`${server}db/`, `${server}(engine|workflows|jobs)/`, `${server}providers/`], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'resources-import-services-resources-db-and-the-engine',
      comment:
        'A resource imports services/, other resources/, db/ types, transactions and raw queries, engine/ (to start and cancel workflows) and providers/types.ts; never a handler, the binding, a workflow kind, a job, the seed or a driver.',
      severity: 'error',
      from: { path: `${server}resources/` },
      to: {
        path: [
          `${server}http/`,
          `${server}operations/`,
          `${server}(workflows|jobs)/`,
          `${server}db/`,
          `${server}providers/`,
          `${server}(app|main|admin|start-up|runtime)\\.ts$`,
        ],
        pathNot: [`${server}db/(schema|transaction|raw-query)\\.ts$`, `${server}providers/types\\.ts$`],
      },
    },
    {
      name: 'services-import-db-and-the-events',
      comment:
        'Rules that span resources import db/, resources/events.ts (a quota reached is told: its event and notification) and providers/types.ts; never another resource, a workflow, a handler or the binding.',
      severity: 'error',
      from: { path: `${server}services/` },
      to: {
        path: [
          `${server}http/`,
          `${server}operations/`,
          `${server}resources/`,
          `${server}(engine|workflows|jobs)/`,
          `${server}db/seed\\.ts$`,
          `${server}providers/`,
          `${server}(app|main|admin|start-up|runtime)\\.ts$`,
        ],
        pathNot: [`${server}resources/events\\.ts$`, `${server}providers/types\\.ts$`],
      },
    },
    {
      name: 'workflows-and-jobs-below-the-handlers',
      comment:
        "Workflow kinds and the workers' jobs call resources, services, the engine and providers; handlers start them through resources, never the reverse.",
      severity: 'error',
      from: { path: `${server}(workflows|jobs)/` },
      to: { path: [`${server}http/`, `${server}operations/`, `${server}db/seed\\.ts$`, `${server}(app|main|admin|start-up|runtime)\\.ts$`] },
    },
    {
      name: 'changes-told-by-their-resources',
      comment:
        "A state change's event and notification are written by the resource function that makes the change, together and with one type (resources/events.ts: recordEventAndNotify); a workflow kind or job makes the change, never the notification.",
      severity: 'error',
      from: { path: `${server}(workflows|jobs)/` },
      to: { path: `${server}resources/notifications\\.ts$` },
    },
    {
      name: 'workflow-kinds-and-jobs-apart',
      comment: 'A kind is a workflow definition and a job a timer of the workers; neither calls the other (runtime.ts assembles both).',
      severity: 'error',
      from: { path: `${server}(workflows|jobs)/` },
      to: { path: `${server}(workflows|jobs)/`, pathNot: `${server}$1/` },
    },
    {
      name: 'workflow-engine-below-the-resources',
      comment: 'The engine (pg-boss triggers, the workflows table) is imported by resources, so it imports db/, providers/types.ts and only types of services.',
      severity: 'error',
      from: { path: `${server}engine/` },
      to: {
        path: [`${server}resources/`, `${server}services/`, `${server}providers/`, `${server}(workflows|jobs|http|operations)/`],
        pathNot: `${server}providers/types\\.ts$`,
        dependencyTypesNot: ['type-only'],
      },
    },
    {
      name: 'db-is-a-leaf',
      comment: 'The database layer (connection, schema, migrations) depends on nothing above it.',
      severity: 'error',
      from: { path: `${server}db/`, pathNot: `${server}db/(migrate-cli|seed)\\.ts$` },
      to: {
        path: [
          `${server}http/`,
          `${server}operations/`,
          `${server}resources/`,
          `${server}services/`,
          `${server}(engine|workflows|jobs)/`,
          `${server}providers/`,
        ],
      },
    },
    {
      name: 'seed-imports-only-resources',
      comment:
        'The demo and test data (db/seed.ts) uses resources/ (users, workspaces, tokens, machine states) and providers/ types; no rule layer above them.',
      severity: 'error',
      from: { path: `${server}db/seed\\.ts$` },
      to: {
        path: [`${server}http/`, `${server}operations/`, `${server}services/`, `${server}(engine|workflows|jobs)/`, `${server}providers/`],
        pathNot: `${server}providers/types\\.ts$`,
      },
    },
    {
      name: 'no-cycle-in-the-server',
      comment: 'A cycle ties modules into one: neither can change or be tested alone. Type-only imports do not run and are not followed.',
      severity: 'error',
      from: { path: server },
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
    {
      name: 'providers-are-leaves',
      comment: 'Drivers of outside systems know nothing of our tables, rules or handlers; they are handed what they need.',
      severity: 'error',
      // The composition root (providers/index.ts) wires drivers to the database.
      from: { path: `${server}providers/`, pathNot: `${server}providers/index\\.ts$` },
      to: {
        path: [`${server}http/`, `${server}operations/`, `${server}resources/`, `${server}services/`, `${server}(engine|workflows|jobs)/`, `${server}db/`],
      },
    },
    {
      name: 'telemetry-is-a-leaf',
      comment: 'Metrics and traces are recorded by every layer, so they import none of them: only the provider error kinds and the configuration types.',
      severity: 'error',
      from: { path: `${server}telemetry/` },
      to: {
        path: server,
        pathNot: [`${server}telemetry/`, `${server}providers/types\\.ts$`, `${server}config\\.ts$`],
      },
    },
    {
      name: 'provider-chosen-in-the-composition-root',
      comment: 'Only the composition root (app.ts, main.ts, runtime.ts) and tests pick a driver implementation.',
      severity: 'error',
      from: { path: server, pathNot: [`${server}(app|main|admin|runtime)\\.ts$`, `${server}providers/`] },
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

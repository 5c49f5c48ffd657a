// `pnpm mock`: a mock of the API for front-end work, answered by Prism from the contract
// (packages/api-types/generated/openapi.json) behind a small proxy (scripts/mock-proxy.ts) that answers malformed
// JSON with 400 and contract violations with the contract's error body. Listens on 127.0.0.1:4010, or on $PORT.
//   curl -H 'Authorization: Bearer svc_pat_x' http://127.0.0.1:4010/v1/clusters
//   curl -H 'Authorization: Bearer svc_pat_x' -H 'Prefer: code=404, example=not_found' http://127.0.0.1:4010/v1/clusters/cl_1
//   curl -H 'Authorization: Bearer svc_pat_x' -H 'Prefer: dynamic=true' http://127.0.0.1:4010/v1/clusters
// It prints one listen line; `pnpm mock --verbose` also shows Prism's own log (its routes, each request).
// Ctrl-C or SIGTERM stops the proxy and Prism and exits 0.
import { once } from 'node:events';
import type { Server } from 'node:http';
import { type PrismServer, startPrism } from '../test/support/prism.ts';
import { createMockProxy } from './mock-proxy.ts';

const port = Number(process.env.PORT ?? 4010);
if (!Number.isInteger(port) || port < 1 || port > 65535) {
  console.error(`PORT must be an integer from 1 to 65535, not ${JSON.stringify(process.env.PORT)}.`);
  process.exit(2);
}

// Handlers first, so a signal during start-up also stops cleanly (a Prism still starting is killed on exit).
let prism: PrismServer | undefined;
let proxy: Server | undefined;
let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    stopping = true;
    proxy?.closeAllConnections();
    proxy?.close();
    void (prism?.stop() ?? Promise.resolve()).then(() => process.exit(0));
  });
}

const fail = (error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
};
// Prism on a free port of its own; callers talk to the proxy.
const verbose = process.argv.includes('--verbose');
prism = await startPrism({ mode: 'mock', host: '127.0.0.1', stdio: verbose ? 'inherit' : 'buffer' }).catch(fail);
proxy = createMockProxy(prism.url);
proxy.listen(port, '127.0.0.1');
await Promise.race([
  once(proxy, 'listening'),
  once(proxy, 'error').then(([error]) => {
    void prism?.stop();
    fail(new Error(`Cannot listen on 127.0.0.1:${port}: ${(error as NodeJS.ErrnoException).code ?? error}`));
  }),
]);
console.log(
  `Mock API (Prism) listening on http://127.0.0.1:${port} (any bearer token works; headers 'Prefer: code=404', 'Prefer: example=<name>', 'Prefer: dynamic=true')`,
);
void prism.exited.then((code) => {
  if (stopping) return;
  console.error(`Prism exited unexpectedly (${code})${verbose ? '' : `:\n${prism?.output()}`}`);
  process.exit(typeof code === 'number' && code !== 0 ? code : 1);
});

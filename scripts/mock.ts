// `pnpm mock`: a mock of the API, answered by Prism from the contract's examples
// (packages/api-types/generated/openapi.json). Listens on 127.0.0.1:4010, or on $PORT.
//   curl -H 'Authorization: Bearer svc_pat_x' http://127.0.0.1:4010/v1/clusters
//   curl -H 'Authorization: Bearer svc_pat_x' -H 'Prefer: code=404, example=not_found' http://127.0.0.1:4010/v1/clusters/cl_1
// Ctrl-C or SIGTERM stops Prism and exits 0.
import { type PrismServer, startPrism } from '../test/support/prism.ts';

const port = Number(process.env.PORT ?? 4010);
if (!Number.isInteger(port) || port < 1 || port > 65535) {
  console.error(`PORT must be an integer from 1 to 65535, not ${JSON.stringify(process.env.PORT)}.`);
  process.exit(2);
}

// Handlers first, so a signal during start-up also stops cleanly (a Prism still starting is killed on exit).
let prism: PrismServer | undefined;
let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    stopping = true;
    void (prism?.stop() ?? Promise.resolve()).then(() => process.exit(0));
  });
}

prism = await startPrism({ mode: 'mock', port, host: '127.0.0.1', stdio: 'inherit' }).catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
console.log(`Mock API (Prism) listening on ${prism.url}`);
void prism.exited.then((code) => {
  if (stopping) return;
  console.error(`Prism exited unexpectedly (${code}).`);
  process.exit(typeof code === 'number' && code !== 0 ? code : 1);
});

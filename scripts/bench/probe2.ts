import autocannon from 'autocannon';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { systemClock } from '../../packages/server/src/clock.ts';
import { openDatabase } from '../../packages/server/src/db/connect.ts';
import { createToken } from '../../packages/server/src/services/tokens.ts';
const url = 'postgres://postgres@127.0.0.1:5432/platform_bench';
const c = openDatabase(url);
const ws = await c.db.selectFrom('workspaces').selectAll().executeTakeFirstOrThrow();
const { secret } = await createToken(c.db, systemClock, { userId: ws.owner_id, kind: 'pat', name: 'probe', expiresAt: null });
await c.close();
const cpu = (pid: number) => { const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' '); return (Number(f[11]) + Number(f[12])) * 10; };
for (const [name, script, port] of [['baseline', 'scripts/bench/baseline-server.ts', 18085], ['server', 'packages/server/src/main.ts', 18086]] as const) {
  const child = spawn(process.execPath, [...(process.env.NODE_FLAGS ? process.env.NODE_FLAGS.split(' ') : []), script], { env: { ...process.env, DATABASE_URL: url, PORT: String(port), LOG_LEVEL: 'warn' }, stdio: 'ignore' });
  await new Promise((r) => setTimeout(r, 2500));
  const c0 = cpu(child.pid!);
  const r = await autocannon({ url: `http://127.0.0.1:${port}/v1/clusters?limit=50`, headers: { authorization: `Bearer ${secret}`, 'x-workspace-id': ws.id }, connections: 32, duration: 6 });
  const c1 = cpu(child.pid!);
  console.log(readFileSync(`/proc/${child.pid}/status`, 'utf8').split('\n').filter((l) => /VmHWM/.test(l)).join(' '));
  console.log(name, 'rps', r.requests.average.toFixed(0), 'cpu ms/req', ((c1 - c0) / r.requests.total).toFixed(3), 'bytes/resp', (r.throughput.total / r.requests.total).toFixed(0));
  child.kill('SIGINT');
  await new Promise((r) => setTimeout(r, 1000));
}

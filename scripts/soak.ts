// `pnpm soak [--minutes 60] [--idle-minutes N] [--rate 50] [--sample-seconds 60]`: whether the server's memory
// stays flat under a steady mixed load. The real server process (main.ts, API and workers, with the Node flags of
// `pnpm start`) on a fresh database (`platform_soak`), offered about `rate` requests a second for `minutes`:
// lists (clusters, workspaces, products, installs), registry credentials created and deleted, installs with
// idempotency keys (every fourth one a retry of an earlier one, answered from the stored response), while 20
// followers read the event stream and 10 an install's log stream, and one webhook endpoint (a loopback receiver)
// gets every event. Each sample records the resident memory of the server and its child processes, their open
// file descriptors and the database's connections; at the end it prints the RSS slope (MB a minute, least
// squares) of each half of the load and of the idle period after it (default a sixth of the load, at least 2
// minutes). At most 200 requests are in flight: on a machine too busy for the server to keep up, the rest are
// skipped and counted rather than piled up. Not part of `pnpm test`. Exits 1 when a request failed unexpectedly
// or a follower was cut.
import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { createUser, seedSampleResources, systemClock } from '@platform/server/testing';
import { sql } from 'kysely';
import { freshDatabase } from './fresh-database.ts';
import { startServerProcess } from './server-process.ts';

const flag = (name: string, fallback: number) => {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
};
const MINUTES = flag('minutes', 60);
const IDLE_MINUTES = flag('idle-minutes', Math.max(2, MINUTES / 6));
const RATE = flag('rate', 50);
const SAMPLE_SECONDS = flag('sample-seconds', 60);
const EVENT_FOLLOWERS = 20;
const LOG_FOLLOWERS = 10;
const MAX_IN_FLIGHT = 200;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The process and its descendants (the server may run its roles as child processes). */
function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const ppid = Number(readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // The process ended meanwhile.
    }
  }
  const tree = [root];
  for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i]!) ?? []));
  return tree;
}

function sampleTree(root: number): { rssMb: number; fds: number } {
  let rssKb = 0;
  let fds = 0;
  for (const pid of processTree(root)) {
    try {
      rssKb += Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
      fds += readdirSync(`/proc/${pid}/fd`).length;
    } catch {
      // The process ended meanwhile.
    }
  }
  return { rssMb: rssKb / 1024, fds };
}

/** Least-squares slope of y over x. */
function slope(points: { x: number; y: number }[]): number {
  if (points.length < 2) return Number.NaN;
  const mx = points.reduce((s, p) => s + p.x, 0) / points.length;
  const my = points.reduce((s, p) => s + p.y, 0) / points.length;
  const num = points.reduce((s, p) => s + (p.x - mx) * (p.y - my), 0);
  const den = points.reduce((s, p) => s + (p.x - mx) ** 2, 0);
  return num / den;
}

interface Counts {
  events: number;
  cut: number;
  refused: number;
}
/** Set before the followers are closed at the end: what ends after it was not cut by the server. */
let stopping = false;

/** An SSE follower that stays connected; counts what it receives and whether it was cut. */
function follow(url: string, headers: Record<string, string>, counts: Counts): http.ClientRequest {
  const request = http.get(url, { headers: { ...headers, accept: 'text/event-stream' }, agent: false }, (response) => {
    if (response.statusCode !== 200) {
      counts.refused++;
      response.resume();
      return;
    }
    response.setEncoding('utf8');
    response.on('data', (chunk: string) => {
      counts.events += chunk.split('\n\n').length - 1;
    });
    response.on('close', () => {
      if (!stopping) counts.cut++;
    });
  });
  request.on('error', () => {
    if (!stopping) counts.cut++;
  });
  return request;
}

async function main(): Promise<void> {
  const { admin, url, connection: db } = await freshDatabase('platform_soak', 'soak');
  const user = await createUser(db.db, systemClock, 'soak@platform.example', 'pro');
  const sample = await seedSampleResources(db.db, systemClock, user, 'soak');
  await sql`
    INSERT INTO clusters (id, workspace_id, name, region_id, kaas_version, kaas_release, status, status_message, created_at)
    SELECT 'cl_soak' || lpad(n::text, 6, '0'), ${user.workspaceId}, 'soak-' || n, 'fsn1', 'v1.31', 'v1.31.13', 'RUNNING', NULL, 1700000000 + n
    FROM generate_series(1, 500) AS n`.execute(db.db);
  await db.close();

  let delivered = 0;
  const receiver = http.createServer((req, res) => {
    delivered++;
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');

  const server = await startServerProcess({
    DATABASE_URL: url.toString(),
    PORT: '0',
    LOG_LEVEL: 'warn',
    SECRETS_KEY: randomBytes(32).toString('base64'),
    WEBHOOK_ALLOW_HTTP_LOOPBACK: 'true',
    SIM_BOOT_SECONDS: '1',
    SIM_RELEASE_SECONDS: '1',
    PROVIDER_RATE_LIMIT: '1000',
  });
  const base = server.base;
  const auth = { authorization: `Bearer ${user.token}`, 'x-workspace-id': user.workspaceId };
  const json = { ...auth, 'content-type': 'application/json' };
  const failures = new Map<string, number>();
  const fail = (what: string) => failures.set(what, (failures.get(what) ?? 0) + 1);
  const expect = async (what: string, response: Promise<Response>, statuses: number[]) => {
    try {
      const r = await response;
      if (!statuses.includes(r.status)) fail(`${what} ${r.status}`);
      if (r.status < 300) return (await r.json().catch(() => undefined)) as Record<string, unknown> | undefined;
      await r.body?.cancel();
      return undefined;
    } catch (error) {
      fail(`${what} ${(error as Error).message}`);
      return undefined;
    }
  };

  const endpoint = await expect(
    'POST /v1/webhook_endpoints',
    fetch(`${base}/v1/webhook_endpoints`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook` }),
    }),
    [201],
  );
  if (!endpoint) throw new Error(`the webhook endpoint was not created: ${[...failures.keys()].join(', ')}`);

  // A running install whose log stream the log followers read.
  const first = await expect(
    'POST /v1/installs',
    fetch(`${base}/v1/installs`, { method: 'POST', headers: json, body: JSON.stringify({ product_id: sample.productId, region_id: 'fsn1' }) }),
    [202],
  );
  for (let i = 0; ; i++) {
    const state = await expect('GET /v1/installs/{id}', fetch(`${base}/v1/installs/${first!.id}`, { headers: auth }), [200]);
    if (state?.status === 'running') break;
    if (i > 600) throw new Error(`install ${first!.id} did not reach running (${state?.status})`);
    await sleep(100);
  }

  const streams = { events: 0, cut: 0, refused: 0 };
  const logs = { events: 0, cut: 0, refused: 0 };
  const followers = [
    ...Array.from({ length: EVENT_FOLLOWERS }, () => follow(`${base}/v1/events/stream`, auth, streams)),
    ...Array.from({ length: LOG_FOLLOWERS }, () => follow(`${base}/v1/installs/${first!.id}/logs?tail=1`, auth, logs)),
  ];

  // The mix of one second at 50 a second: 36 lists, 5 credentials created and 5 deleted, 4 installs (the first a
  // retry of the last one before it, with its key).
  const lists = ['/v1/clusters?limit=50', '/v1/workspaces', '/v1/products', '/v1/installs?limit=20'];
  const credentials: string[] = [];
  let lastKey = randomUUID();
  let sent = 0;
  let skipped = 0;
  let inFlight = 0;
  const send = (slot: number) => {
    sent++;
    const k = slot % 50;
    if (k < 36) return expect('GET lists', fetch(`${base}${lists[k % lists.length]}`, { headers: auth }), [200]);
    if (k < 41) {
      return expect(
        'POST /v1/registry/credentials',
        fetch(`${base}/v1/registry/credentials`, {
          method: 'POST',
          headers: json,
          body: JSON.stringify({ name: `soak-${slot}`, registry_url: '140.82.112.33', username: 'bot', password: 'secret-value' }),
        }),
        [201],
      ).then((created) => {
        if (created) credentials.push(created.id as string);
      });
    }
    if (k < 46) {
      const id = credentials.shift();
      return id && expect('DELETE /v1/registry/credentials/{id}', fetch(`${base}/v1/registry/credentials/${id}`, { method: 'DELETE', headers: auth }), [204]);
    }
    // The first install of a second retries the last one of the second before (answered by then).
    if (k !== 46) lastKey = randomUUID();
    // A retry may arrive while its first request is still being answered: 409, as the contract says. On a busy
    // machine the retry, sent a second later, can even take the key first, and then the first request is the one
    // answered 409 (seen 5 times in 36,000 installs at load average 14): either of the pair may be.
    const paired = k === 46 || k === 49;
    return expect(
      k === 46 ? 'POST /v1/installs (retry)' : k === 49 ? 'POST /v1/installs (idempotency-key, retried)' : 'POST /v1/installs (idempotency-key)',
      fetch(`${base}/v1/installs`, {
        method: 'POST',
        headers: { ...json, 'idempotency-key': lastKey },
        body: JSON.stringify({ product_id: sample.productId, region_id: 'fsn1' }),
      }),
      paired ? [202, 409] : [202],
    );
  };

  const samples: { phase: 'load' | 'idle'; minute: number; rssMb: number; fds: number; connections: number }[] = [];
  const started = Date.now();
  const takeSample = async (phase: 'load' | 'idle') => {
    const { rssMb, fds } = sampleTree(server.child.pid!);
    const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = 'platform_soak'`.execute(admin.db);
    const s = { phase, minute: (Date.now() - started) / 60_000, rssMb, fds, connections: Number(rows[0]!.n) };
    samples.push(s);
    console.log(
      `${s.minute.toFixed(1).padStart(6)} min  ${phase.padEnd(5)} RSS ${rssMb.toFixed(1).padStart(6)} MB  fds ${String(fds).padStart(4)}  db connections ${String(s.connections).padStart(3)}  ` +
        `requests ${sent} (${skipped} skipped, ${inFlight} in flight), webhooks ${delivered}, stream events ${streams.events}, log events ${logs.events}, load average ${os.loadavg()[0]!.toFixed(1)}`,
    );
  };

  console.log(
    `soak: ${MINUTES} min at ${RATE} req/s, then ${IDLE_MINUTES} min idle, a sample every ${SAMPLE_SECONDS} s; server ${base} (pid ${server.child.pid})`,
  );
  let code = 0;
  try {
    await takeSample('load');
    // Catches up after a late timer (a busy machine), so the rate offered stays the rate asked.
    const loadStart = Date.now();
    // A server that falls behind (a machine busy with other work) would otherwise gather requests without bound,
    // and their memory with them: beyond MAX_IN_FLIGHT a request is skipped and counted.
    let slot = 0;
    const ticker = setInterval(() => {
      const due = Math.floor(((Date.now() - loadStart) * RATE) / 1000);
      for (; slot < due; slot++) {
        if (inFlight >= MAX_IN_FLIGHT) {
          skipped++;
          continue;
        }
        inFlight++;
        void Promise.resolve(send(slot)).finally(() => inFlight--);
      }
    }, 1000 / RATE);
    const sampler = setInterval(() => void takeSample('load'), SAMPLE_SECONDS * 1000);
    await sleep(MINUTES * 60_000);
    clearInterval(ticker);
    clearInterval(sampler);
    await takeSample('load');
    stopping = true;
    for (const follower of followers) follower.destroy();
    const idleEnd = Date.now() + IDLE_MINUTES * 60_000;
    while (Date.now() < idleEnd) {
      await sleep(Math.min(SAMPLE_SECONDS * 1000, idleEnd - Date.now()));
      await takeSample('idle');
    }

    // The first tenth of the load (at most 2 minutes) is the process warming up: its heap and pools grow to their
    // working size. The halves are of the rest.
    const warm = Math.min(2, MINUTES / 10);
    const load = samples.filter((s) => s.phase === 'load' && s.minute >= warm);
    const half = warm + (MINUTES - warm) / 2;
    const points = (list: typeof samples) => list.map((s) => ({ x: s.minute, y: s.rssMb }));
    const range = (key: 'fds' | 'connections', list: typeof samples) =>
      list.length === 0 ? 'not sampled' : `${Math.min(...list.map((s) => s[key]))}–${Math.max(...list.map((s) => s[key]))}`;
    const idle = samples.filter((s) => s.phase === 'idle');
    console.log(
      `\nRSS slope after ${warm.toFixed(1)} min of warm-up, first half of the load: ${slope(points(load.filter((s) => s.minute <= half))).toFixed(3)} MB/min`,
    );
    console.log(`RSS slope, second half of the load: ${slope(points(load.filter((s) => s.minute >= half))).toFixed(3)} MB/min`);
    console.log(`RSS slope, idle after: ${slope(points([load.at(-1)!, ...idle])).toFixed(3)} MB/min`);
    console.log(
      `RSS ${load[0]!.rssMb.toFixed(0)} MB at the start, ${load.at(-1)!.rssMb.toFixed(0)} MB at the end of the load, ${idle.at(-1)?.rssMb.toFixed(0)} MB after idling`,
    );
    console.log(
      `file descriptors ${range('fds', load)} under load, ${range('fds', idle)} idle; database connections ${range('connections', load)} and ${range('connections', idle)}`,
    );
    console.log(
      `requests sent ${sent} (${(sent / (MINUTES * 60)).toFixed(1)} a second; ${skipped} skipped while ${MAX_IN_FLIGHT} were in flight); webhooks received ${delivered}; event-stream events ${streams.events}, log events ${logs.events}`,
    );
    const cut = streams.cut + logs.cut;
    if (failures.size > 0 || cut > 0 || streams.refused + logs.refused > 0) {
      console.error(`soak: failures ${JSON.stringify(Object.fromEntries(failures))}; followers cut ${cut}, refused ${streams.refused + logs.refused}`);
      code = 1;
    }
  } finally {
    stopping = true;
    for (const follower of followers) follower.destroy();
    await server.stop();
    receiver.close();
    await admin.close();
  }
  process.exit(code);
}

await main();

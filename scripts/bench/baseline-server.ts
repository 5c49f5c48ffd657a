// The baseline for the server benchmark: raw node:http + pg serving GET /v1/clusters with the same checks and
// the same SQL as the server, and nothing else: a PAT's form and checksum, its look-up by digest joined with the
// X-Workspace-Id membership and workspace (the server's query), expiry, its last use recorded once a minute, its
// scope and workspace restriction, then one keyset page. Every query is a prepared statement, as the server's are.
import { createHash } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import pg from 'pg';

pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const port = Number(process.env.PORT ?? 0);
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

const TOKEN = `SELECT t.id, t.user_id, t.expires_at, t.last_used_at, array_to_string(t.scopes, ' ') AS scopes,
  array_to_string(t.workspace_ids, ' ') AS workspace_ids, w.id AS workspace_id
  FROM tokens t
  LEFT JOIN workspace_members m ON m.user_id = t.user_id AND m.workspace_id = $1
  LEFT JOIN workspaces w ON w.id = m.workspace_id
  WHERE t.digest = $2 AND t.kind = 'pat'`;
const FIRST = 'SELECT * FROM clusters WHERE workspace_id = $1 ORDER BY created_at, id LIMIT $2';
const AFTER = 'SELECT * FROM clusters WHERE workspace_id = $1 AND (created_at, id) > ($2, $3) ORDER BY created_at, id LIMIT $4';

function checksumValid(token: string): boolean {
  let value = createHash('sha256').update(token.slice(8, -6)).digest().readUIntBE(0, 6);
  let sum = '';
  for (let i = 0; i < 6; i++) {
    sum += BASE62[value % 62];
    value = Math.floor(value / 62);
  }
  return sum === token.slice(-6);
}

const refuse = (res: ServerResponse, status: number) => res.writeHead(status, { 'content-type': 'application/json' }).end('{"error":{}}');

createServer(async (req, res) => {
  try {
    const url = new URL(req.url ?? '/', 'http://x');
    const token = /^Bearer (svc_pat_[A-Za-z0-9]{38})$/.exec(req.headers.authorization ?? '')?.[1];
    if (!token || !checksumValid(token)) return refuse(res, 401);
    const workspaceId = req.headers['x-workspace-id'];
    if (typeof workspaceId !== 'string') return refuse(res, 400);
    const digest = createHash('sha256').update(token).digest();
    const { rows: tokens } = await pool.query({ name: 'token', text: TOKEN, values: [workspaceId, digest] });
    const now = Math.floor(Date.now() / 1000);
    const found = tokens[0];
    if (!found || (found.expires_at !== null && found.expires_at <= now)) return refuse(res, 401);
    if (found.last_used_at === null || now - found.last_used_at >= 60) {
      await pool.query({ name: 'used', text: 'UPDATE tokens SET last_used_at = $1 WHERE id = $2', values: [now, found.id] });
    }
    const scopes = found.scopes?.split(' ');
    if (scopes && !scopes.includes('clusters:read') && !scopes.includes('clusters:write')) return refuse(res, 403);
    if (found.workspace_ids !== null && !found.workspace_ids.split(' ').includes(workspaceId)) return refuse(res, 403);
    if (found.workspace_id === null) return refuse(res, 403);
    const limit = Number(url.searchParams.get('limit') ?? 50);
    const cursor = url.searchParams.get('cursor');
    const after = cursor ? JSON.parse(Buffer.from(cursor, 'base64url').toString()) : undefined;
    const { rows } = after
      ? await pool.query({ name: 'after', text: AFTER, values: [workspaceId, after.t, after.i, limit + 1] })
      : await pool.query({ name: 'first', text: FIRST, values: [workspaceId, limit + 1] });
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    const body = JSON.stringify({
      data: page.map((r) => ({
        id: r.id,
        name: r.name,
        workspace_id: r.workspace_id,
        region_id: r.region_id,
        kaas: { version: r.kaas_version, status: r.status, status_message: r.status_message },
        created_at: r.created_at,
      })),
      pagination: { cursor: last ? Buffer.from(JSON.stringify({ t: last.created_at, i: last.id })).toString('base64url') : '', has_more: rows.length > limit },
    });
    res.writeHead(200, { 'content-type': 'application/json' }).end(body);
  } catch {
    res.writeHead(500).end();
  }
}).listen(port, '127.0.0.1', function (this: import('node:net').Server) {
  const address = this.address() as { port: number };
  console.log(`listening ${address.port}`);
});

// Exit normally on a signal (so `--cpu-prof` can write its profile).
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(0));

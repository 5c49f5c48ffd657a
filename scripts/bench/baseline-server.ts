// The baseline for the server benchmark: raw node:http + pg doing the same SQL work as GET /v1/clusters
// (token look-up by digest, workspace membership, one keyset page), with nothing else.
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import pg from 'pg';

pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const port = Number(process.env.PORT ?? 0);

createServer(async (req, res) => {
  try {
    const url = new URL(req.url ?? '/', 'http://x');
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
    const digest = createHash('sha256').update(token).digest();
    const { rows: tokens } = await pool.query('SELECT user_id, expires_at FROM tokens WHERE digest = $1', [digest]);
    if (!tokens[0]) {
      res.writeHead(401).end();
      return;
    }
    const workspaceId = req.headers['x-workspace-id'];
    const { rows: members } = await pool.query('SELECT 1 FROM workspace_members WHERE workspace_id = $1 AND user_id = $2', [workspaceId, tokens[0].user_id]);
    if (!members[0]) {
      res.writeHead(403).end();
      return;
    }
    const limit = Number(url.searchParams.get('limit') ?? 50);
    const cursor = url.searchParams.get('cursor');
    const after = cursor ? JSON.parse(Buffer.from(cursor, 'base64url').toString()) : undefined;
    const { rows } = after
      ? await pool.query('SELECT * FROM clusters WHERE workspace_id = $1 AND (created_at, id) > ($2, $3) ORDER BY created_at, id LIMIT $4', [
          workspaceId,
          after.t,
          after.i,
          limit + 1,
        ])
      : await pool.query('SELECT * FROM clusters WHERE workspace_id = $1 ORDER BY created_at, id LIMIT $2', [workspaceId, limit + 1]);
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

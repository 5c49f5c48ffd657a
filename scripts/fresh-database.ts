// A database of a benchmark's or load run's own, made anew on the server DATABASE_URL names (or an embedded
// one under .data/<dataDirName>) and migrated. `admin` stays connected to the server, to drop it afterwards.
import { join } from 'node:path';
import { type Connection, connect, migrateToLatest, openDatabase } from '@platform/server/testing';
import { sql } from 'kysely';
import { repoRoot } from './gen.ts';

export interface FreshDatabase {
  admin: Connection;
  url: URL;
  connection: Connection;
}

export async function freshDatabase(name: string, dataDirName: string): Promise<FreshDatabase> {
  const admin = await connect({ url: process.env.DATABASE_URL }, join(repoRoot, '.data', dataDirName));
  await sql`DROP DATABASE IF EXISTS ${sql.id(name)} WITH (FORCE)`.execute(admin.db);
  await sql`CREATE DATABASE ${sql.id(name)}`.execute(admin.db);
  const url = new URL(admin.url);
  url.pathname = `/${name}`;
  const connection = openDatabase(url.toString());
  await migrateToLatest(connection.db);
  return { admin, url, connection };
}

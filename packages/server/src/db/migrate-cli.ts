// `pnpm db:migrate`: applies pending migrations to DATABASE_URL (or the embedded database) and exits.
import { loadConfig } from '../config.ts';
import { connect } from './connect.ts';
import { migrateToLatest } from './migrate.ts';

const config = loadConfig();
const connection = await connect(config.databaseUrl, config.dataDir);
try {
  await migrateToLatest(connection.db);
  console.log('Migrations applied.');
} finally {
  await connection.close();
}

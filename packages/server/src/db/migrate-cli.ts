// `pnpm db:migrate`: applies pending migrations to DATABASE_DIRECT_URL, else DATABASE_URL (or the embedded
// database), and exits.
import { databaseLocation, loadConfig } from '../config.ts';
import { connect } from './connect.ts';
import { applyMigrations } from './migrate.ts';

const config = loadConfig();
const connection = await connect(databaseLocation(config), config.dataDir);
try {
  await applyMigrations(connection);
  console.log('Migrations applied.');
} finally {
  await connection.close();
}

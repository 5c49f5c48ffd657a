// The container image's one entrypoint (scripts/image.ts builds the image):
//   --role api|worker|all   serve (main.ts; no arguments: all)
//   migrate                 apply the pending migrations and exit (db/migrate-cli.ts)
//   demo-token, create-user, set-plan, set-override …   the admin commands (admin.ts), with their arguments
// The image keeps nothing in its own files (its root is read-only): no embedded PostgreSQL, so DATABASE_URL is
// required, and no generated secrets key, which every process of an installation must share, so serving needs
// SECRETS_KEY.
const [command] = process.argv.slice(2);
const serve = command === undefined || command.startsWith('--');

const required = {
  DATABASE_URL: 'a postgres:// URL (the image runs no embedded PostgreSQL)',
  ...(serve ? { SECRETS_KEY: '32 bytes in base64 (`openssl rand -base64 32`), the same for every process of the installation' } : {}),
};
for (const [name, what] of Object.entries(required)) {
  if (!process.env[name]) {
    console.error(`Cannot start: ${name} must be set to ${what}`);
    process.exit(1);
  }
}
if (serve) await import('./main.ts');
else if (command === 'migrate') await import('./db/migrate-cli.ts');
else await import('./admin.ts');

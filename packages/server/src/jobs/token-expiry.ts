// Tells the owners of personal access tokens about to expire (resources/tokens.ts), now and then, in every
// worker process; each token is told once, whichever worker finds it.
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Clock } from '../clock.ts';
import type { Database } from '../db/schema.ts';
import { tellExpiringTokens } from '../resources/tokens.ts';

export function tokenExpiryNotices({ db, clock, logger, everyMs }: { db: Kysely<Database>; clock: Clock; logger: Logger; everyMs: number }) {
  let timer: NodeJS.Timeout | undefined;
  const run = async () => {
    try {
      const told = await tellExpiringTokens(db, clock.now());
      if (told > 0) logger.info({ told }, 'owners of expiring tokens told');
    } catch (error) {
      logger.warn({ err: error }, 'telling about expiring tokens failed; retrying on the next run');
    }
  };
  return {
    start(): void {
      void run();
      timer = setInterval(() => void run(), everyMs);
    },
    stop(): void {
      if (timer) clearInterval(timer);
    },
  };
}

// `platform login` (OAuth 2.0 device authorization grant, RFC 8628) and `platform logout`.
import { setTimeout as sleep } from 'node:timers/promises';
import { createPlatformClient, PlatformApiError } from '@platform/client';
import type { Command } from 'commander';
import { offerToOpen } from '../browser.ts';
import { configPath, readConfig, updateConfig } from '../config.ts';
import { action, example } from '../context.ts';
import { done, json } from '../output.ts';
import { EXIT_ERROR } from '../wait.ts';

const GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:device_code';

/** Why a device grant ended without a token, in words a person acts on. */
const FINAL_ERRORS: Record<string, string> = {
  access_denied: 'The sign-in was denied in the browser.',
  expired_token: 'The code expired before it was approved. Run `platform login` again.',
  invalid_grant: 'The service no longer knows this code (already used or expired). Run `platform login` again.',
};

export function registerAuth(program: Command): void {
  example(
    program
      .command('login')
      .description('sign in through the browser (device code) and keep the session token in the config file')
      .action(
        action(async ({ settings, out }) => {
          // The device calls take no token: whatever is configured is about to be replaced.
          const anonymous = createPlatformClient({ baseUrl: settings.apiUrl });
          const grant = await anonymous.POST('/v1/auth/device/code', { body: { client_id: 'platform-cli' } });
          // Instructions on stderr under --json, so stdout stays one JSON document.
          const say = (text: string) => (out.json ? out.io.stderr : out.io.stdout).write(`${text}\n`);
          say(`To sign in, open ${grant.verification_uri} and enter the code: ${grant.user_code}`);
          say(`Or open ${grant.verification_uri_complete}`);
          const stopOffering = offerToOpen(out.io, grant.verification_uri, say);
          say('Waiting for approval…');
          try {
            let interval = grant.interval;
            const deadline = Date.now() + grant.expires_in * 1000;
            for (;;) {
              await sleep(interval * 1000);
              if (Date.now() > deadline) {
                out.io.stderr.write(`Error: ${FINAL_ERRORS.expired_token}\n`);
                return EXIT_ERROR;
              }
              try {
                const token = await anonymous.POST('/v1/auth/device/token', { body: { grant_type: GRANT_TYPE, device_code: grant.device_code } });
                // Only the session token and where it works are kept; a PLATFORM_TOKEN in the environment never is.
                updateConfig(out.io.env, { token: token.access_token, api_url: settings.apiUrl });
                break;
              } catch (error) {
                if (!(error instanceof PlatformApiError)) throw error;
                if (error.code === 'authorization_pending') continue;
                if (error.code === 'slow_down') {
                  interval += 5; // RFC 8628 §3.5: every slow_down adds 5 seconds for good
                  continue;
                }
                const reason = FINAL_ERRORS[error.code];
                if (reason === undefined) throw error;
                out.io.stderr.write(`Error: ${reason}\n`);
                return EXIT_ERROR;
              }
            }
          } finally {
            stopOffering();
          }
          // The new token at work: the account that approved it (a code approved by another account of the user's,
          // or by someone else, is seen here) and the workspaces it sees.
          const stored = readConfig(out.io.env);
          const api = createPlatformClient({ baseUrl: settings.apiUrl, token: stored.token });
          const me = await api.GET('/v1/user', {});
          const workspaces = await api.GET('/v1/workspaces');
          const account = `${me.email} (${me.id})`;
          if (out.json) {
            say(`Logged in as ${account}.`);
            return json(out, workspaces);
          }
          const names = workspaces.data.map((w) => `${w.name} (${w.id})`).join(', ');
          out.io.stdout.write(
            `Logged in to ${settings.apiUrl} as ${account}. Workspaces: ${names || 'none'}\nSession token saved in ${configPath(out.io.env)}\nNot you? Run \`platform logout\`.\n`,
          );
        }),
      ),
    'platform login',
    'platform --api-url https://api.platform.example login',
  );

  example(
    program
      .command('logout')
      .description('end the session (revoke its token) and forget it')
      .action(
        action(async ({ api, out, settings }) => {
          const stored = readConfig(out.io.env);
          if (settings.token === undefined) {
            out.io.stderr.write('Not logged in.\n');
            return EXIT_ERROR;
          }
          // Logout revokes the token it is called with: only the session this CLI keeps is ours to end. A
          // token from --token or PLATFORM_TOKEN (a CI job's PAT) is left alone.
          if (settings.token !== stored.token) {
            out.io.stderr.write(
              'The token in use comes from --token or PLATFORM_TOKEN, not from `platform login`; it is not revoked. Revoke a personal access token with `platform tokens revoke <id>`.\n',
            );
            return EXIT_ERROR;
          }
          try {
            await api.POST('/v1/auth/logout');
          } catch (error) {
            // A token the service no longer accepts is as good as logged out; forget it all the same.
            if (!(error instanceof PlatformApiError && error.status === 401)) throw error;
          }
          updateConfig(out.io.env, { token: undefined });
          done(out, 'Logged out.');
        }),
      ),
    'platform logout',
  );
}

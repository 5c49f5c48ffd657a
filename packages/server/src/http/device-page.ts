// GET /device: the page where a signed-in user approves or denies a device sign-in (RFC 8628's verification
// URI). Outside the contract, like /docs. One self-contained document: the user pastes a token (kept in this
// browser's localStorage when they ask), confirms the code (prefilled from ?user_code=) and clicks Approve or
// Deny; the page calls approveDeviceCode with fetch. No external assets, and a Content-Security-Policy that
// allows only this page's own script and style (by hash) and requests to this origin; it cannot be framed.
import { createHash } from 'node:crypto';

const style = `
  :root { color-scheme: light dark; font-family: system-ui, sans-serif; }
  body { margin: 0; display: grid; place-items: center; min-height: 100vh; background: Canvas; color: CanvasText; }
  main { width: min(28rem, 92vw); padding: 2rem; border: 1px solid color-mix(in srgb, CanvasText 20%, transparent); border-radius: 12px; }
  h1 { font-size: 1.4rem; margin: 0 0 .5rem; }
  p { line-height: 1.45; }
  label { display: block; font-weight: 600; margin: 1rem 0 .3rem; }
  input[type=text], input[type=password] { box-sizing: border-box; width: 100%; padding: .55rem .6rem; font-size: 1rem; border-radius: 6px; border: 1px solid GrayText; }
  #user_code { font-family: ui-monospace, monospace; font-size: 1.5rem; letter-spacing: .15em; text-transform: uppercase; text-align: center; }
  .remember { display: flex; gap: .4rem; align-items: center; font-weight: 400; margin-top: .5rem; }
  .actions { display: flex; gap: .75rem; margin-top: 1.5rem; }
  button { flex: 1; padding: .6rem; font-size: 1rem; border-radius: 6px; border: 1px solid GrayText; cursor: pointer; }
  button[value=approve] { background: #1f7a3a; color: white; border-color: #1f7a3a; }
  #forget { flex: none; background: none; border: none; text-decoration: underline; padding: 0; font-size: .9rem; }
  #status { margin-top: 1.25rem; min-height: 1.5rem; font-weight: 600; }
  #status[data-kind=error] { color: #c62828; }
  #status[data-kind=ok] { color: #1f7a3a; }
`;

const script = `
  const $ = (id) => document.getElementById(id);
  const KEY = 'platform.device.token';
  const form = $('device-form');
  const status = $('status');
  const code = new URLSearchParams(location.search).get('user_code');
  if (code) $('user_code').value = code;
  const saved = localStorage.getItem(KEY);
  if (saved) { $('token').value = saved; $('forget').hidden = false; }
  function show(kind, text, result) {
    status.dataset.kind = kind;
    status.dataset.result = result || '';
    status.textContent = text;
  }
  $('forget').addEventListener('click', () => {
    localStorage.removeItem(KEY);
    $('token').value = '';
    $('forget').hidden = true;
    show('info', 'The token was removed from this browser.');
  });
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const action = event.submitter && event.submitter.value === 'deny' ? 'deny' : 'approve';
    const token = $('token').value.trim();
    const userCode = $('user_code').value.trim();
    if (!token) return show('error', 'Paste a token first (a personal access token or a session token).');
    if (!userCode) return show('error', 'Enter the code your terminal shows.');
    for (const button of form.querySelectorAll('button')) button.disabled = true;
    show('info', action === 'approve' ? 'Approving…' : 'Denying…');
    try {
      const response = await fetch('/v1/auth/device/approve', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer ' + token },
        body: JSON.stringify({ user_code: userCode, action }),
      });
      const body = await response.json().catch(() => undefined);
      if (response.ok) {
        if ($('remember').checked) { localStorage.setItem(KEY, token); $('forget').hidden = false; }
        show('ok', body.status === 'approved'
          ? 'Approved ' + body.user_code + '. You can go back to your terminal.'
          : 'Denied ' + body.user_code + '. The device will not be signed in.', body.status);
      } else if (response.status === 401) {
        localStorage.removeItem(KEY);
        $('forget').hidden = true;
        show('error', 'The token was not accepted (unknown, expired or revoked). Paste a valid one.', 'unauthorized');
      } else {
        const error = body && body.error ? body.error : { code: 'http_' + response.status, message: 'The service answered ' + response.status + '.' };
        show('error', error.message + (error.suggestion ? ' ' + error.suggestion : ''), error.code);
      }
    } catch (error) {
      show('error', 'The service could not be reached: ' + error.message, 'network');
    } finally {
      for (const button of form.querySelectorAll('button')) button.disabled = false;
    }
  });
`;

const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Sign in a device · Platform</title>
<style>${style}</style>
</head>
<body>
<main>
  <h1>Sign in a device</h1>
  <p>A command-line client asked to sign in as you. Check that the code below is the one your terminal shows,
  then approve it. Deny it if you did not start a sign-in.</p>
  <form id="device-form" autocomplete="off">
    <label for="user_code">Code</label>
    <input id="user_code" name="user_code" type="text" maxlength="9" placeholder="XXXX-XXXX" spellcheck="false" required>
    <label for="token">Your token</label>
    <input id="token" name="token" type="password" placeholder="svc_pat_… or a session token" spellcheck="false">
    <label class="remember"><input id="remember" type="checkbox"> Remember the token in this browser</label>
    <button id="forget" type="button" hidden>Forget the saved token</button>
    <div class="actions">
      <button type="submit" name="action" value="approve">Approve</button>
      <button type="submit" name="action" value="deny">Deny</button>
    </div>
  </form>
  <p id="status" role="status" aria-live="polite"></p>
</main>
<script>${script}</script>
</body>
</html>
`;

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

export const devicePage = {
  html,
  headers: {
    'Content-Security-Policy': [
      "default-src 'none'",
      `script-src ${sha256(script)}`,
      `style-src ${sha256(style)}`,
      "connect-src 'self'",
      "form-action 'none'",
      "frame-ancestors 'none'",
      "base-uri 'none'",
    ].join('; '),
    'X-Frame-Options': 'DENY',
    'Referrer-Policy': 'no-referrer',
  },
} as const;

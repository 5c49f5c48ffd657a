// GET /device: the page where a signed-in user approves or denies a device sign-in (RFC 8628's verification
// URI). Outside the contract, like /docs. One self-contained document: the user pastes a token (kept in this
// browser's localStorage when they ask) and the code (prefilled from ?user_code=); the page shows the waiting
// request (getDeviceSignInRequest: the code, the client that asked and when) and approves only once the user
// has ticked that the code matches their terminal (RFC 8628 §5.4), so a link someone else sent, opened in a browser
// that remembers the token, still cannot approve in one click. Denying needs no confirmation. No external assets,
// and a Content-Security-Policy that allows only this page's own script and style (by hash) and requests to this
// origin; it cannot be framed.
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
  #request { margin-top: 1.5rem; padding: 1rem; border-radius: 8px; background: color-mix(in srgb, CanvasText 6%, transparent); }
  #request-code { font-family: ui-monospace, monospace; font-size: 2rem; letter-spacing: .2em; text-align: center; margin: .25rem 0 .75rem; }
  #request dl { display: grid; grid-template-columns: auto 1fr; gap: .25rem .75rem; margin: 0; }
  #request dt { font-weight: 600; }
  #request dd { margin: 0; }
  .confirm { display: flex; gap: .5rem; align-items: flex-start; font-weight: 600; margin-top: 1rem; }
  h2 { font-size: 1rem; margin: 0; }
  button:disabled { opacity: .5; cursor: not-allowed; }
  #status { margin-top: 1.25rem; min-height: 1.5rem; font-weight: 600; }
  #status[data-kind=error] { color: #c62828; }
  #status[data-kind=ok] { color: #1f7a3a; }
`;

const script = `
  const $ = (id) => document.getElementById(id);
  const KEY = 'platform.device.token';
  const form = $('device-form');
  const status = $('status');
  const approve = $('approve');
  const deny = $('deny');
  const confirm = $('confirm');
  // The request the user is looking at: only its code is ever decided, and only while it is shown.
  let shown = null;
  let lastError;
  const code = new URLSearchParams(location.search).get('user_code');
  if (code) $('user_code').value = code;
  const saved = localStorage.getItem(KEY);
  if (saved) { $('token').value = saved; $('forget').hidden = false; }
  function show(kind, text, result) {
    status.dataset.kind = kind;
    status.dataset.result = result || '';
    status.textContent = text;
  }
  function hideRequest() {
    shown = null;
    $('request').hidden = true;
    confirm.checked = false;
    approve.disabled = true;
  }
  function busy(on) {
    for (const button of document.querySelectorAll('button')) button.disabled = on;
    if (!on) approve.disabled = !(shown && confirm.checked);
  }
  async function send(method, path, token, body) {
    const response = await fetch(path, {
      method,
      headers: Object.assign({ authorization: 'Bearer ' + token }, body ? { 'content-type': 'application/json' } : {}),
      body: body ? JSON.stringify(body) : undefined,
    });
    const json = await response.json().catch(() => undefined);
    lastError = json && json.error ? json.error.code : undefined;
    if (response.status === 401) {
      localStorage.removeItem(KEY);
      $('forget').hidden = true;
      show('error', 'The token was not accepted (unknown, expired or revoked). Paste a valid one.', 'unauthorized');
    } else if (!response.ok) {
      const error = json && json.error ? json.error : { code: 'http_' + response.status, message: 'The service answered ' + response.status + '.' };
      show('error', error.message + (error.suggestion ? ' ' + error.suggestion : ''), error.code);
    }
    return response.ok ? json : undefined;
  }
  const token = () => $('token').value.trim();
  // Step one: look the code up and show what asked, and when.
  async function check() {
    hideRequest();
    const userCode = $('user_code').value.trim();
    if (!token()) return show('error', 'Paste a token first (a personal access token or a session token).');
    if (!userCode) return show('error', 'Enter the code your terminal shows.');
    busy(true);
    show('info', 'Looking the code up…');
    try {
      const request = await send('GET', '/v1/auth/device/requests/' + encodeURIComponent(userCode), token());
      if (!request) {
        // Look-ups are limited apart from decisions (links to unknown codes spend them): the code typed can still
        // be decided, once the user confirms it is their terminal's, without what a look-up shows.
        if (lastError === 'rate_limited') offer({ user_code: userCode.toUpperCase(), client_id: undefined, requested_at: undefined });
        return;
      }
      offer(request);
      show('info', 'Compare the code with your terminal, then approve or deny.', 'shown');
    } catch (error) {
      show('error', 'The service could not be reached: ' + error.message, 'network');
    } finally {
      busy(false);
    }
  }
  function offer(request) {
    shown = request;
    $('request-code').textContent = request.user_code;
    $('request-client').textContent =
      request.client_id === undefined ? 'not looked up' : request.client_id === null ? 'a client that gave no name' : request.client_id;
    const asked = request.requested_at === undefined ? undefined : new Date(request.requested_at * 1000);
    $('request-time').dateTime = asked ? asked.toISOString() : '';
    $('request-time').textContent = asked ? asked.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' }) : 'not looked up';
    $('confirm-code').textContent = request.user_code;
    $('request').hidden = false;
  }
  // Step two: the decision, on the code shown; approving only once the user ticked that it matches.
  async function decide(action) {
    if (!shown) return show('error', 'Look the code up first.');
    if (action === 'approve' && !confirm.checked) return show('error', 'Tick that the code matches your terminal first.', 'unconfirmed');
    const userCode = shown.user_code;
    busy(true);
    show('info', action === 'approve' ? 'Approving…' : 'Denying…');
    try {
      const body = await send('POST', '/v1/auth/device/approve', token(), { user_code: userCode, action });
      if (!body) return;
      if ($('remember').checked) { localStorage.setItem(KEY, token()); $('forget').hidden = false; }
      hideRequest();
      show('ok', body.status === 'approved'
        ? 'Approved ' + body.user_code + '. You can go back to your terminal.'
        : 'Denied ' + body.user_code + '. The device will not be signed in.', body.status);
    } catch (error) {
      show('error', 'The service could not be reached: ' + error.message, 'network');
    } finally {
      busy(false);
    }
  }
  $('forget').addEventListener('click', () => {
    localStorage.removeItem(KEY);
    $('token').value = '';
    $('forget').hidden = true;
    show('info', 'The token was removed from this browser.');
  });
  // A changed code or token hides the request shown: what is confirmed is what is decided.
  $('user_code').addEventListener('input', hideRequest);
  $('token').addEventListener('input', hideRequest);
  confirm.addEventListener('change', () => { approve.disabled = !(shown && confirm.checked); });
  form.addEventListener('submit', (event) => { event.preventDefault(); check(); });
  approve.addEventListener('click', () => decide('approve'));
  deny.addEventListener('click', () => decide('deny'));
  // Opened from the terminal's link with a remembered token: the request is shown at once, never decided.
  if (code && saved) check();
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
  <p>A command-line client asked to sign in as you. Approve it only if you started the sign-in yourself, in your
  own terminal; if someone sent you this link or a code, deny it.</p>
  <form id="device-form" autocomplete="off">
    <label for="token">Your token</label>
    <input id="token" name="token" type="password" placeholder="svc_pat_… or a session token" spellcheck="false">
    <label class="remember"><input id="remember" type="checkbox"> Remember the token in this browser</label>
    <button id="forget" type="button" hidden>Forget the saved token</button>
    <label for="user_code">Code</label>
    <input id="user_code" name="user_code" type="text" maxlength="9" placeholder="XXXX-XXXX" spellcheck="false" required>
    <div class="actions">
      <button id="check" type="submit">Continue</button>
    </div>
  </form>
  <section id="request" aria-labelledby="request-title" hidden>
    <h2 id="request-title">The sign-in request</h2>
    <p id="request-code"></p>
    <dl>
      <dt>Client</dt><dd id="request-client"></dd>
      <dt>Asked at</dt><dd><time id="request-time"></time></dd>
    </dl>
    <label class="confirm"><input id="confirm" type="checkbox"> <span>The code <span id="confirm-code"></span> matches the one my terminal shows</span></label>
    <div class="actions">
      <button id="approve" type="button" value="approve" disabled>Approve</button>
      <button id="deny" type="button" value="deny">Deny</button>
    </div>
  </section>
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

/**
 * The pages' script and style, served as files (`/assets/page.js`,
 * `/assets/page.css`) so the CSP needs no inline script or style.
 *
 * The script uses only the WebAuthn API of the browser
 * (`navigator.credentials.get` / `.create`, W3C Web Authentication Level 3) and
 * its JSON helpers (`PublicKeyCredential.parseRequestOptionsFromJSON`,
 * `parseCreationOptionsFromJSON`, `toJSON`), with a base64url fallback over
 * `btoa`/`atob` for browsers without them.
 *
 * @module
 */

export const PAGE_JS = `'use strict';
(() => {
  const body = document.body;
  const base = body.dataset.base;
  const out = document.getElementById('outcome');
  const buttons = Array.from(document.querySelectorAll('button'));
  const enc = (buf) => {
    let s = '';
    for (const b of new Uint8Array(buf)) s += String.fromCharCode(b);
    return btoa(s).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
  };
  const dec = (str) => {
    const s = atob(str.replace(/-/g, '+').replace(/_/g, '/') + '==='.slice((str.length + 3) % 4));
    return Uint8Array.from(s, (c) => c.charCodeAt(0));
  };
  const show = (kind, text) => {
    out.textContent = kind + (text ? ': ' + text : '');
    out.className = 'outcome ' + kind;
    for (const b of buttons) b.disabled = true;
  };
  const busy = (on) => { for (const b of buttons) b.disabled = on; };
  const post = async (path, data) => {
    const r = await fetch(base + path, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify(data === undefined ? {} : data), credentials: 'omit', cache: 'no-store',
    });
    let json = {};
    try { json = await r.json(); } catch { json = { message: 'the server sent no answer' }; }
    return { ok: r.ok, body: json };
  };
  const requestOptions = (o) => PublicKeyCredential.parseRequestOptionsFromJSON
    ? PublicKeyCredential.parseRequestOptionsFromJSON(o)
    : { ...o, challenge: dec(o.challenge), allowCredentials: (o.allowCredentials || []).map((c) => ({ ...c, id: dec(c.id) })) };
  const creationOptions = (o) => PublicKeyCredential.parseCreationOptionsFromJSON
    ? PublicKeyCredential.parseCreationOptionsFromJSON(o)
    : { ...o, challenge: dec(o.challenge), user: { ...o.user, id: dec(o.user.id) },
        excludeCredentials: (o.excludeCredentials || []).map((c) => ({ ...c, id: dec(c.id) })) };
  const toJson = (cred) => {
    if (typeof cred.toJSON === 'function') return cred.toJSON();
    const r = cred.response;
    const response = { clientDataJSON: enc(r.clientDataJSON) };
    if (r.authenticatorData) response.authenticatorData = enc(r.authenticatorData);
    if (r.signature) response.signature = enc(r.signature);
    if (r.userHandle) response.userHandle = enc(r.userHandle);
    if (r.attestationObject) response.attestationObject = enc(r.attestationObject);
    if (r.getTransports) response.transports = r.getTransports();
    return { id: cred.id, rawId: enc(cred.rawId), type: cred.type, response,
      clientExtensionResults: cred.getClientExtensionResults(), authenticatorAttachment: cred.authenticatorAttachment };
  };
  const assertion = async (options) => toJson(await navigator.credentials.get({ publicKey: requestOptions(options) }));
  // NotAllowedError is what a browser gives when none of its passkeys is one the server asked for
  // (and when the prompt was cancelled, timed out or could not verify the user): say the likely
  // cause. Never a name: the page does not list approvers (anyone holding the link can read it).
  const likely = {
    approve: 'this browser or device may have no passkey enrolled for this server: use the device you enrolled, or enrol this one',
    deny: 'this browser or device may have no passkey enrolled for this server: use the device you enrolled',
    authorise: "this browser or device may have no enrolled approver's passkey for this server: authorise the enrolment on a device enrolled here",
  };
  const refusedBy = (e, step) => {
    const name = e && e.name ? e.name : 'error';
    const why = name === 'NotAllowedError' && likely[step] ? ': ' + likely[step] + ' (or the prompt was cancelled, timed out or could not verify you)' : '';
    show('refused', 'the passkey gave no answer (' + name + ')' + why + (step === 'deny' ? '; nothing was denied' : '; nothing was approved'));
  };

  // Both approve buttons run the same ceremony; the button's scope (this call, or also the offered grant) goes beside the assertion.
  const approveWith = (scope) => async () => {
    busy(true);
    const o = await post('/options');
    if (!o.ok) return show(o.body.outcome || 'refused', o.body.message);
    let a;
    try { a = await assertion(o.body.options); } catch (e) { return refusedBy(e, 'approve'); }
    const r = await post('/assertion', { ...a, scope });
    show(r.body.outcome || 'refused', r.body.message);
  };
  const approve = document.getElementById('approve');
  if (approve) approve.addEventListener('click', approveWith('call'));
  const approveGrant = document.getElementById('approve-grant');
  if (approveGrant) approveGrant.addEventListener('click', approveWith('grant'));
  const revoke = document.getElementById('revoke');
  if (revoke) revoke.addEventListener('click', async () => {
    revoke.disabled = true;
    const r = await post('/revoke');
    const at = document.getElementById('revoke-outcome');
    const kind = r.body.outcome || 'refused';
    at.textContent = kind + (r.body.message ? ': ' + r.body.message : '');
    at.className = 'outcome ' + kind;
  });
  // With notifications on (data-passkey="required"), Deny runs the passkey ceremony too, over a challenge of its own.
  const deny = document.getElementById('deny');
  if (deny) deny.addEventListener('click', async () => {
    busy(true);
    if (deny.dataset.passkey !== 'required') {
      const r = await post('/deny');
      return show(r.body.outcome || 'refused', r.body.message);
    }
    const o = await post('/deny/options');
    if (!o.ok) return show(o.body.outcome || 'refused', o.body.message);
    let a;
    try { a = await assertion(o.body.options); } catch (e) { return refusedBy(e, 'deny'); }
    const r = await post('/deny', a);
    show(r.body.outcome || 'refused', r.body.message);
  });
  const enroll = document.getElementById('enroll');
  if (enroll) enroll.addEventListener('click', async () => {
    busy(true);
    let o = await post('/options');
    if (!o.ok) return show(o.body.outcome || 'refused', o.body.message);
    if (o.body.step === 'authenticate') {
      let a;
      try { a = await assertion(o.body.options); } catch (e) { return refusedBy(e, 'authorise'); }
      const r = await post('/authenticate', a);
      if (!r.ok) return show(r.body.outcome || 'refused', r.body.message);
      // A quorum: this approver was counted; the next one confirms on their own device.
      if (r.body.outcome === 'counted') return show('counted', r.body.message);
      o = await post('/options');
      if (!o.ok) return show(o.body.outcome || 'refused', o.body.message);
    }
    let c;
    try { c = toJson(await navigator.credentials.create({ publicKey: creationOptions(o.body.options) })); } catch (e) { return refusedBy(e, 'register'); }
    const r = await post('/register', c);
    show(r.body.outcome || 'refused', r.body.message);
  });
  const left = document.getElementById('time-left');
  if (left) {
    const end = Date.now() + Number(left.dataset.seconds) * 1000;
    const tick = () => {
      const s = Math.max(0, Math.round((end - Date.now()) / 1000));
      left.textContent = Math.floor(s / 60) + ' min ' + String(s % 60).padStart(2, '0') + ' s';
      if (s === 0) { for (const b of buttons) b.disabled = true; return; }
      setTimeout(tick, 1000);
    };
    tick();
  }
})();
`;

export const PAGE_CSS = `:root { color-scheme: light dark; font-family: system-ui, sans-serif; }
body { margin: 0; background: Canvas; color: CanvasText; }
main { max-width: 46rem; margin: 2rem auto; padding: 0 1.25rem; line-height: 1.45; }
h1 { font-size: 1.4rem; margin: 0 0 1rem; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .3rem 1rem; margin: 0 0 1.25rem; }
dl.facts dt { font-weight: 600; }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.question { font-size: 1.1rem; padding: .9rem 1rem; border: 2px solid #b45309; border-radius: .5rem; background: rgba(180, 83, 9, .08); overflow-wrap: anywhere; white-space: pre-line; }
h2 { font-size: 1rem; margin: 1.4rem 0 .4rem; }
ul.values { padding-left: 1.2rem; margin: 0; }
ul.values li { margin: .25rem 0; }
code { font-family: ui-monospace, monospace; font-size: .95em; white-space: pre-wrap; overflow-wrap: anywhere; background: rgba(127, 127, 127, .15); padding: .05rem .25rem; border-radius: .2rem; }
.actions { display: flex; gap: .75rem; margin: 1.5rem 0 1rem; }
button { font: inherit; font-weight: 600; padding: .6rem 1.3rem; border-radius: .4rem; border: 1px solid transparent; cursor: pointer; }
button#approve, button#approve-grant, button#enroll { background: #b91c1c; color: #fff; }
.grant-offer, .granted { border: 2px solid #b91c1c; border-radius: .5rem; padding: .9rem 1rem; margin: 0 0 1rem; background: rgba(185, 28, 28, .06); }
.grant-offer .grant, .granted .grant { margin: .6rem 0 0; overflow-wrap: anywhere; }
.granted h2 { margin-top: 0; }
button#revoke { background: transparent; color: inherit; border-color: currentColor; }
button#deny { background: transparent; color: inherit; border-color: currentColor; }
button:disabled { opacity: .5; cursor: default; }
.outcome { font-weight: 600; min-height: 1.5rem; }
.outcome.approved, .outcome.enrolled { color: #15803d; }
.outcome.counted, .outcome.authorized { color: #1d4ed8; }
.quorum { margin: .8rem 0 0; padding: .6rem 1rem; border-left: 4px solid #1d4ed8; background: rgba(29, 78, 216, .08); }
.outcome.denied, .outcome.refused, .outcome.expired { color: #b91c1c; }
.outcome.revoked, .outcome.ended { color: #15803d; }
.note { font-size: .9rem; opacity: .8; }
`;

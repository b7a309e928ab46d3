/**
 * Enrolment of an approver's passkey (W3C Web Authentication Level 3, §7.1,
 * registration with user verification required): a one-shot page on both
 * loopback addresses whose URL carries a one-time secret. It accepts exactly
 * one registration, writes the public-key credential to the approvers file
 * (mode 0600; never a private key) and stops. When the file already holds
 * approvers, the page first asks for an existing approver's passkey.
 *
 * With a quorum of N > 1 (`approversRequired`, or the N the file records from an earlier enrolment
 * with a quorum, whichever is larger) one existing approver is not enough: the page asks for the
 * passkeys of N distinct existing approvers (distinct names and credentials; each opens the same
 * link on their own device), N for each principal the new approver gets, or all of that
 * principal's approvers while it has fewer than N. Only then does the next press of
 * "Enrol passkey" register the new passkey, and the file records N, so a later enrolment without
 * the option still needs N. One person holding one passkey cannot enrol a second name alone.
 *
 * The ceremonies' checks are in `webauthn.ts`, the listener in `listener.ts`, the page's frame in
 * `html.ts`; the challenges and counters of one enrolment live in a `MemoryLedger`.
 *
 * @module
 */
import { DEFAULT_ENROLL_TIMEOUT_SECONDS } from '../defaults.js';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ConfigError } from '../errors.js';
import { MemoryLedger } from '../store/memory.js';
import {
  approversFor,
  checkApproverName,
  readApprovers,
  writeApprovers,
  type Approver,
  type ApproversFile,
} from './approvers.js';
import { MAX_APPROVALS_REQUIRED } from '../store/approvalStore.js';
import { describePrincipal } from '../principals.js';
import { assetAt, escapeHtml, layout } from './html.js';
import { hostMatches, hostnameMatches, listenLoopback, originMatches, readJson, send, sendJson } from './listener.js';
import {
  authenticationOptions,
  CHALLENGE_TTL_MS,
  claimedChallenge,
  libraryReason,
  newChallenge,
  registrationOptions,
  verifyAssertion,
  verifyRegistration,
} from './webauthn.js';
import { parsePublicUrl } from './publicUrl.js';

/** Options of {@link enrollApprover}. */
export interface EnrollOptions {
  /** The approvers file (created when missing). */
  approversPath: string;
  /** The new approver's name. */
  name: string;
  /** Replace an approver of the same name. Defaults to false (refused). */
  replace?: boolean;
  /**
   * The port on 127.0.0.1 and ::1. Defaults to 0 (random free port); with `publicUrl`, to the public
   * URL's port (its explicit port, else 443 for https and 80 for http).
   */
  port?: number;
  /**
   * Enrol for a server behind this public URL (`mcp-confirm --http --public-url URL`): the page's
   * origin is the URL's origin and the credential's RP ID its host name, so the browser must reach
   * this command's loopback port under that URL (a TLS proxy on this host, or a name mapped to
   * 127.0.0.1). Defaults to none: `http://localhost:PORT`, RP ID `localhost` (stdio).
   */
  publicUrl?: string | URL;
  /** How long to wait for the registration, in whole seconds, 1 to 86,400. Defaults to 300 (`DEFAULT_ENROLL_TIMEOUT_SECONDS`). */
  timeoutSeconds?: number;
  /**
   * The principals the approver may approve for: `local` (stdio, or `--http` without tokens) or, for a
   * server verifying tokens, `jwtPrincipalFor(iss, sub)` strings. Defaults to `['local']`.
   */
  principals?: string[];
  /** Called with the enrolment URL (with its one-time secret) and the loopback port the page listens on, once it listens. */
  onUrl: (url: string, port: number) => void;
  /** Diagnostics (stderr). */
  onLog?: (line: string) => void;
  /**
   * A quorum: how many distinct existing approvers must confirm this enrolment with their passkeys
   * (1 to 16), per principal of the new approver (all of a principal's approvers while it has
   * fewer). The larger of this and the file's recorded `approversRequired` applies, and is recorded
   * in the file when above 1. Defaults to 1 (one existing approver, as without a quorum).
   */
  approversRequired?: number;
}

/**
 * Runs one enrolment to its end.
 *
 * @returns the saved approver.
 * @throws {ConfigError} when nothing was enrolled: `ERR_CONFIG_APPROVER_NAME` (a bad `name`),
 *   `ERR_CONFIG_PUBLIC_URL`, `ERR_CONFIG_APPROVERS_FILE` (the file cannot be read),
 *   `ERR_CONFIG_RP_ID` (the file was made for another RP ID), `ERR_CONFIG_APPROVER_EXISTS` (`name`
 *   exists without `replace`), `ERR_CONFIG_LISTEN` (the port is taken), `ERR_CONFIG_ENROLL_TIMEOUT`
 *   (no registration arrived within `timeoutSeconds`).
 * @throws {RangeError} when `principals` is empty or holds an empty string, `timeoutSeconds` is
 *   not a whole number from 1 to 86,400, or `approversRequired` not one from 1 to 16.
 */
export async function enrollApprover(options: EnrollOptions): Promise<Approver> {
  const name = checkApproverName(options.name);
  const publicUrl = options.publicUrl === undefined ? undefined : parsePublicUrl(String(options.publicUrl));
  const RP_ID = publicUrl?.hostname ?? 'localhost';
  const principals = options.principals ?? ['local'];
  if (principals.length === 0 || principals.some((p) => typeof p !== 'string' || p === ''))
    throw new RangeError('an approver needs at least one principal');
  const timeoutSeconds = options.timeoutSeconds ?? DEFAULT_ENROLL_TIMEOUT_SECONDS;
  if (!Number.isSafeInteger(timeoutSeconds) || timeoutSeconds <= 0 || timeoutSeconds > 86_400) {
    throw new RangeError('timeoutSeconds must be a whole number of seconds from 1 to 86400');
  }
  const asked = options.approversRequired ?? 1;
  if (!Number.isSafeInteger(asked) || asked < 1 || asked > MAX_APPROVALS_REQUIRED)
    throw new RangeError(`approversRequired must be a whole number from 1 to ${MAX_APPROVALS_REQUIRED}`);
  const existing: ApproversFile = await readApprovers(options.approversPath, RP_ID);
  const quorum = Math.max(asked, existing.approversRequired ?? 1);
  if (existing.rpId !== RP_ID) {
    throw new ConfigError(
      'ERR_CONFIG_RP_ID',
      `the approvers file ${options.approversPath} was made for RP ID ${JSON.stringify(existing.rpId)}, not ${JSON.stringify(RP_ID)}${publicUrl ? ` (from the public URL ${publicUrl.origin})` : ' (stdio: localhost)'}; use another file for this RP ID`,
      { value: options.approversPath },
    );
  }
  if (existing.approvers.some((a) => a.name === name) && options.replace !== true) {
    throw new ConfigError(
      'ERR_CONFIG_APPROVER_EXISTS',
      `an approver named ${JSON.stringify(name)} already exists in ${options.approversPath}`,
      { value: name },
    );
  }
  const log = options.onLog ?? (() => {});
  const secret = randomBytes(24).toString('base64url');
  const challenges = new MemoryLedger();
  // With approvers already enrolled, one of them (with a quorum, enough distinct ones) must approve this enrolment first.
  let authorized = existing.approvers.length === 0;
  const authorisers: Approver[] = [];
  /** With a quorum: how many more distinct approvers must confirm (0: enough). */
  const stillNeeded = (): number => {
    let most = authorisers.length === 0 ? 1 : 0;
    for (const p of principals) {
      const needed = Math.min(quorum, approversFor(existing, p).length);
      const have = authorisers.filter((a) => a.principals.includes(p)).length;
      most = Math.max(most, needed - have);
    }
    return most;
  };
  let registering = false;
  let finish!: (result: { ok: true; approver: Approver } | { ok: false; error: ConfigError }) => void;
  const finished = new Promise<{ ok: true; approver: Approver } | { ok: false; error: ConfigError }>(
    (resolve) => (finish = resolve),
  );
  let origin = '';

  const secretMatches = (given: string): boolean => {
    const a = Buffer.from(given);
    const b = Buffer.from(secret);
    return a.length === b.length && timingSafeEqual(a, b);
  };
  const refuse = (res: ServerResponse, status: number, reason: string): void => {
    log(`enrolment request refused: ${reason}`);
    sendJson(res, status, { outcome: 'refused', message: `${reason}; nothing was enrolled` });
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    // Only our own host: exactly localhost:PORT, or behind a public URL its host name (a proxy may use another port).
    if (!(publicUrl ? hostnameMatches(req.headers.host, origin) : hostMatches(req, origin)))
      return send(res, 421, 'text/plain; charset=utf-8', 'wrong host');
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (serveAsset(req, res, path)) return;
    const m = /^\/enroll\/([^/]*)(\/options|\/authenticate|\/register)?$/.exec(path);
    // 1. Without the one-time secret there is nothing here (and nothing is said about why).
    if (m === null || !secretMatches(m[1]!)) {
      return send(
        res,
        404,
        'text/html; charset=utf-8',
        layout(
          'Not found',
          '',
          '<h1>Enrol a passkey</h1>\n<p id="outcome" class="outcome refused">refused: this enrolment link is not valid.</p>',
        ),
      );
    }
    const action = m[2];
    if (action === undefined) {
      if (req.method !== 'GET' && req.method !== 'HEAD')
        return send(res, 405, 'text/plain; charset=utf-8', 'method not allowed');
      const main = `<h1>Enrol a passkey for mcp-confirm</h1>
<dl class="facts">
<dt>Approver</dt><dd>${escapeHtml(name)}</dd>
<dt>RP ID</dt><dd><code>${escapeHtml(RP_ID)}</code></dd>
<dt>May approve for</dt><dd>${principals.map((p) => escapeHtml(describePrincipal(p))).join('<br>')}</dd>
<dt>Approvers file</dt><dd><code>${escapeHtml(options.approversPath)}</code></dd>
</dl>
${
  existing.approvers.length === 0
    ? ''
    : quorum > 1
      ? `<p class="note" id="quorum">This file requires ${quorum} distinct existing approvers to confirm first, each with their own passkey: each opens this link on their device and presses "Enrol passkey". The new passkey is then created by the press after the last one.</p>`
      : '<p class="note">This file already holds approvers: one of them must first confirm with their passkey.</p>'
}
<div class="actions"><button id="enroll" type="button">Enrol passkey</button></div>
<p id="outcome" class="outcome" role="status"></p>`;
      return send(
        res,
        200,
        'text/html; charset=utf-8',
        layout('Enrol a passkey', `data-base="/enroll/${secret}"`, main),
      );
    }
    if (req.method !== 'POST') return send(res, 405, 'text/plain; charset=utf-8', 'method not allowed');
    if (!originMatches(req, origin)) return refuse(res, 403, 'this request did not come from the enrolment page');
    const body = await readJson(req);
    if (!body.ok) return refuse(res, 400, `bad request body (${body.reason})`);
    if (action === '/options') {
      const challenge = newChallenge();
      const nowMs = Date.now();
      await challenges.putChallenge(
        challenge,
        authorized ? 'register' : 'authenticate',
        nowMs + CHALLENGE_TTL_MS,
        nowMs,
      );
      if (!authorized)
        return sendJson(res, 200, {
          step: 'authenticate',
          options: await authenticationOptions(RP_ID, challenge, existing.approvers),
        });
      return sendJson(res, 200, { step: 'register', options: await registrationOptions(RP_ID, name, challenge) });
    }
    const clientChallenge = claimedChallenge(body.value);
    if (clientChallenge === undefined) return refuse(res, 400, 'no valid WebAuthn response');
    const purpose = await challenges.takeChallenge(clientChallenge, Date.now());
    const expected = { origin, rpId: RP_ID, challenge: clientChallenge };
    if (action === '/authenticate') {
      if (purpose !== 'authenticate') return refuse(res, 403, 'unknown, used or expired challenge');
      const approver = existing.approvers.find((a) => a.credentialId === body.value.id);
      if (approver === undefined) return refuse(res, 403, 'this passkey is not an enrolled approver');
      try {
        const newCounter = await verifyAssertion(body.value, expected, approver);
        if (newCounter === undefined) return refuse(res, 403, 'the passkey assertion did not verify');
        if (!(await challenges.advanceCounter(approver.credentialId, newCounter, approver.counter))) {
          return refuse(res, 403, 'the signature counter did not move forward');
        }
      } catch (e) {
        return refuse(res, 403, `the passkey assertion did not verify (${libraryReason(e)})`);
      }
      if (quorum > 1) {
        if (authorized) return refuse(res, 409, 'this enrolment is already authorized');
        if (authorisers.some((a) => a.name === approver.name || a.credentialId === approver.credentialId))
          return refuse(
            res,
            409,
            `${approver.name} has already confirmed this enrolment: another approver must confirm it with their own passkey`,
          );
        authorisers.push(approver);
        const left = stillNeeded();
        const names = authorisers.map((a) => a.name).join(', ');
        if (left > 0) {
          log(`enrolment confirmed by approver ${approver.name}; ${left} more needed`);
          return sendJson(res, 200, {
            outcome: 'counted',
            message: `confirmed by ${names}; ${left} more existing approver${left === 1 ? '' : 's'} must confirm on their own device`,
          });
        }
        authorized = true;
        log(`enrolment authorized by approvers ${names}`);
        return sendJson(res, 200, { outcome: 'authorized', message: `authorized by ${names}` });
      }
      authorized = true;
      log(`enrolment authorized by approver ${approver.name}`);
      return sendJson(res, 200, { outcome: 'authorized', message: `authorized by ${approver.name}` });
    }
    // /register
    if (!authorized) return refuse(res, 403, "an existing approver's passkey must approve this enrolment first");
    if (purpose !== 'register') return refuse(res, 403, 'unknown, used or expired challenge');
    if (registering) return refuse(res, 409, 'a registration is already being saved');
    registering = true;
    try {
      const credential = await verifyRegistration(body.value, expected);
      if (credential === undefined) {
        registering = false;
        return refuse(res, 403, 'the passkey registration did not verify');
      }
      const approver: Approver = {
        name,
        credentialId: credential.credentialId,
        publicKey: credential.publicKey,
        counter: credential.counter,
        transports: credential.transports,
        principals,
        enrolledAt: new Date().toISOString(),
      };
      // Re-read just before writing, so an approver saved meanwhile is kept.
      const current = await readApprovers(options.approversPath, RP_ID);
      if (current.approvers.some((a) => a.credentialId === approver.credentialId)) {
        registering = false;
        return refuse(res, 409, 'this passkey is already enrolled');
      }
      const recorded = Math.max(quorum, current.approversRequired ?? 1);
      await writeApprovers(options.approversPath, {
        version: 1,
        rpId: RP_ID,
        approvers: [...current.approvers.filter((a) => a.name !== name), approver],
        ...(recorded > 1 ? { approversRequired: recorded } : {}),
      });
      res.once('finish', () => finish({ ok: true, approver }));
      sendJson(res, 200, { outcome: 'enrolled', message: `passkey of ${name} saved; you can close this page` });
    } catch (e) {
      registering = false;
      return refuse(res, 403, `the passkey registration did not verify (${libraryReason(e)})`);
    }
  };

  const port = options.port ?? (publicUrl ? Number(publicUrl.port || (publicUrl.protocol === 'https:' ? 443 : 80)) : 0);
  const listener = await listenLoopback(port, (req, res) => {
    void handle(req, res).catch((e: unknown) => {
      log(`internal error: ${(e as Error).message}`);
      if (!res.headersSent) sendJson(res, 500, { outcome: 'refused', message: 'internal error; nothing was enrolled' });
    });
  });
  origin = publicUrl?.origin ?? listener.origin;
  const timer = setTimeout(
    () =>
      finish({
        ok: false,
        error: new ConfigError(
          'ERR_CONFIG_ENROLL_TIMEOUT',
          `no passkey was enrolled within ${timeoutSeconds} s; nothing was saved`,
        ),
      }),
    timeoutSeconds * 1000,
  );
  options.onUrl(`${origin}/enroll/${secret}`, listener.port);
  const result = await finished;
  clearTimeout(timer);
  await listener.close();
  if (!result.ok) throw result.error;
  return result.approver;
}

/** Serves the static script and style; `true` when it answered. */
function serveAsset(req: IncomingMessage, res: ServerResponse, path: string): boolean {
  if (req.method !== 'GET' && req.method !== 'HEAD') return false;
  const asset = assetAt(path);
  if (asset === undefined) return false;
  send(res, 200, asset.type, asset.body);
  return true;
}

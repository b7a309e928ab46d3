/**
 * Passkey approval: the out-of-band page a confirmation is approved on (MCP
 * spec 2026-07-28, client/elicitation, URL mode), where approving requires a
 * WebAuthn assertion with user verification (W3C Web Authentication Level 3,
 * §7.2) from an enrolled approver allowed for the calling principal.
 *
 * Routes (all under one loopback listener, see http.ts):
 * - `GET /approve/ID`: the page. Shows the audience, principal, tool, question,
 *   each value uncut, and the time left. Changes nothing.
 * - `POST /approve/ID/options`: a single-use challenge (stored in the
 *   {@link ApprovalStore}, so any replica can check it) and the allowed credentials.
 * - `POST /approve/ID/assertion`: takes the challenge (once), verifies the
 *   assertion with `@simplewebauthn/server` (exact origin with port, RP ID,
 *   challenge, user verified) against the approvers allowed for the principal,
 *   moves the signature counter forward atomically, then marks the approval
 *   approved with the approver's name and credential id.
 * - `POST /approve/ID/deny`: marks it declined.
 * Every POST needs `Origin` equal to the page origin, and every request `Host`
 * equal to the page's host.
 *
 * > [!WARNING]
 * > Trust boundary: this protects against everything that speaks MCP or HTTP
 * > to the server (the client, an agent driving it, an injected prompt,
 * > another local process without the authenticator). Code running as the
 * > same OS user can edit the approvers file; see the README's stronger setup.
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { generateAuthenticationOptions, verifyAuthenticationResponse, type AuthenticationResponseJSON } from '@simplewebauthn/server';
import { approversFor, type ApproversFile } from './approvers.js';
import {
  escapeHtml,
  hostMatches,
  layout,
  listenLoopback,
  originMatches,
  readJson,
  send,
  sendJson,
  serveAsset,
  type LoopbackListener,
} from './http.js';
import type { ApprovalRecord, ApprovalStore } from './store.js';

/** What the page shows, stored with the approval as JSON text. All strings are already rendered (escaped) values. */
export interface ApprovalView {
  audience: string;
  principal: string;
  tool: string;
  /** The rendered question, as the client's elicitation carries it (code spans in backticks). */
  question: string;
  /** Each value uncut and rendered, with a label (e.g. `file`, `requested as`). */
  values: Array<{ label: string; text: string }>;
}

/** Something worth a line on stderr. Never carries secrets. */
export type ApprovalEvent =
  | { type: 'approval-approved'; approver: string }
  | { type: 'approval-declined' }
  | { type: 'approval-refused'; reason: string };

/** Options of {@link PasskeyApproval.start}. */
export interface PasskeyApprovalOptions {
  /** Where approvals, challenges and counters live: the ledger object (MemoryLedger, SqliteLedger, RedisLedger). */
  store: ApprovalStore;
  /** The approvers, loaded once at start-up (see `loadApproversForServer`). */
  approvers: ApproversFile;
  /** The port on 127.0.0.1 and ::1. Defaults to 0 (a random free port). */
  port?: number;
  /** How long round 2 waits for the page's decision, in whole seconds, 0 to 3,600. Defaults to 60. 0 answers at once. */
  waitSeconds?: number;
  /** The clock, Unix milliseconds, for every stored time (challenges, decisions, expiry). Defaults to `Date.now`. */
  now?: () => number;
  /** How often a waiting round 2 re-reads a shared store, in milliseconds. Defaults to 250. */
  pollIntervalMs?: number;
  /** Diagnostics (stderr). Defaults to none. */
  onEvent?: (event: ApprovalEvent) => void;
}

export { REDEEM_WITHIN_MS } from './store.js';
/** How long a WebAuthn challenge stays usable, in milliseconds. */
export const CHALLENGE_TTL_MS = 120_000;

const ID_RE = /^[A-Za-z0-9_-]{22,64}$/;

/** A new random id: 24 bytes (192 bits), base64url. */
export function randomId(): string {
  return randomBytes(24).toString('base64url');
}

/** Renders the question's code spans as `<code>`; everything escaped. Values inside carry no backtick (rendered). */
function questionHtml(question: string): string {
  return question
    .split('`')
    .map((part, i) => (i % 2 === 1 ? `<code>${escapeHtml(part)}</code>` : escapeHtml(part)))
    .join('');
}

function minutes(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
}

/**
 * The approval page and its store. Start one per server process with {@link PasskeyApproval.start},
 * then give it to `createConfirmation({ approval })`.
 */
export class PasskeyApproval {
  /** `http://localhost:PORT` over stdio: the page origin and the expected WebAuthn origin. */
  readonly origin: string;
  /** The WebAuthn RP ID (`localhost` over stdio). */
  readonly rpId: string;
  readonly port: number;
  /** How long round 2 waits for a decision, in milliseconds. */
  readonly waitMs: number;
  readonly store: ApprovalStore;
  readonly #approvers: ApproversFile;
  readonly #now: () => number;
  readonly #poll: number;
  readonly #emit: (event: ApprovalEvent) => void;
  readonly #decided = new EventEmitter();
  #listener: LoopbackListener | undefined;

  private constructor(options: PasskeyApprovalOptions, listener: LoopbackListener | undefined, origin: string) {
    this.store = options.store;
    this.#approvers = options.approvers;
    this.#now = options.now ?? Date.now;
    this.#poll = options.pollIntervalMs ?? 250;
    this.waitMs = (options.waitSeconds ?? 60) * 1000;
    this.#listener = listener;
    this.origin = origin;
    this.port = listener?.port ?? Number(new URL(origin).port);
    this.rpId = new URL(origin).hostname;
    const onEvent = options.onEvent ?? (() => {});
    this.#emit = (e) => {
      try {
        onEvent(e);
      } catch {
        // diagnostics never change the outcome
      }
    };
    this.#decided.setMaxListeners(0);
  }

  /**
   * Starts the page on `127.0.0.1:PORT` and `[::1]:PORT` (origin `http://localhost:PORT`, RP ID `localhost`).
   *
   * @throws {RangeError} when `waitSeconds` is not a whole number from 0 to 3,600, or the approvers file was made for another RP ID.
   * @throws {ListenError} naming the address when either is taken.
   * @example
   * const approval = await PasskeyApproval.start({ store: ledger, approvers: await loadApproversForServer(path, roots) });
   * const confirmation = await createConfirmation({ ledger, approval });
   */
  static async start(options: PasskeyApprovalOptions): Promise<PasskeyApproval> {
    const wait = options.waitSeconds ?? 60;
    if (!Number.isSafeInteger(wait) || wait < 0 || wait > 3_600) throw new RangeError('waitSeconds must be a whole number of seconds from 0 to 3600');
    if (options.approvers.rpId !== 'localhost') {
      throw new RangeError(`the approvers were enrolled for RP ID ${JSON.stringify(options.approvers.rpId)}, but this page is served on localhost`);
    }
    let self: PasskeyApproval | undefined;
    const listener = await listenLoopback(options.port ?? 0, (req, res) => {
      if (self === undefined) {
        send(res, 503, 'text/plain; charset=utf-8', 'starting');
        return;
      }
      void self.handle(req, res).catch(() => {
        if (!res.headersSent) sendJson(res, 500, { outcome: 'refused', message: 'internal error; nothing was approved' });
        else res.destroy();
      });
    });
    self = new PasskeyApproval(options, listener, listener.origin);
    return self;
  }

  /** The page URL of an approval id. */
  urlFor(id: string): string {
    return `${this.origin}/approve/${id}`;
  }

  /**
   * Opens a pending approval for a `jti` (one per `jti`, with a fresh random id).
   *
   * @throws {RangeError} when the `jti` already has one.
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` when the store fails.
   */
  async open(input: { jti: string; principal: string; view: ApprovalView; expiresAtMs: number }, nowMs: number): Promise<{ id: string; url: string }> {
    const id = randomId();
    await this.store.openApproval({ id, jti: input.jti, principal: input.principal, view: JSON.stringify(input.view), expiresAtMs: input.expiresAtMs }, nowMs);
    return { id, url: this.urlFor(id) };
  }

  /**
   * Waits up to {@link waitMs} for the page's decision on a `jti`'s approval (re-reading the store every
   * `pollIntervalMs`, woken at once by a decision made by this process).
   *
   * @returns the record (pending when no decision came in time), or `undefined` when there is none or it expired.
   */
  async waitForDecision(jti: string, signal?: AbortSignal): Promise<ApprovalRecord | undefined> {
    let record = await this.store.approvalByJti(jti, this.#now());
    if (record === undefined || record.status !== 'pending' || this.waitMs === 0) return record;
    const id = record.id;
    const deadline = performance.now() + this.waitMs;
    while (record !== undefined && record.status === 'pending') {
      const left = deadline - performance.now();
      if (left <= 0 || signal?.aborted) break;
      await new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          this.#decided.off(id, done);
          signal?.removeEventListener('abort', done);
          resolve();
        };
        const timer = setTimeout(done, Math.min(this.#poll, left));
        this.#decided.on(id, done);
        signal?.addEventListener('abort', done);
      });
      record = await this.store.approvalByJti(jti, this.#now());
    }
    return record;
  }

  /**
   * Calls `listener` once when this process records a decision for the approval `id`, or never
   * (forgotten after `withinMs`).
   *
   * @returns a function that unsubscribes.
   */
  onDecided(id: string, listener: () => void, withinMs: number): () => void {
    const forget = (): void => {
      clearTimeout(timer);
      this.#decided.off(id, fire);
    };
    const fire = (): void => {
      forget();
      listener();
    };
    const timer = setTimeout(forget, withinMs);
    timer.unref();
    this.#decided.on(id, fire);
    return forget;
  }

  /** Stops the listener. Idempotent. */
  async close(): Promise<void> {
    const l = this.#listener;
    this.#listener = undefined;
    await l?.close();
  }

  /** Answers one request of the page. */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // 1. Only our own host name: a DNS-rebinding page (another name resolving to loopback) gets nothing.
    if (!hostMatches(req, this.origin)) return send(res, 421, 'text/plain; charset=utf-8', 'wrong host');
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (serveAsset(req, res, path)) return;
    const m = /^\/approve\/([^/]+)(\/options|\/assertion|\/deny)?$/.exec(path);
    if (m === null) return send(res, 404, 'text/plain; charset=utf-8', 'not found');
    const id = m[1]!;
    const action = m[2];
    if (action === undefined) {
      if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, 'text/plain; charset=utf-8', 'method not allowed');
      return this.#page(res, id);
    }
    if (req.method !== 'POST') return send(res, 405, 'text/plain; charset=utf-8', 'method not allowed');
    // 2. Every POST comes from the page itself: Origin exactly ours (scheme, host and port), never absent.
    if (!originMatches(req, this.origin)) return this.#refuse(res, 403, 'this request did not come from the approval page');
    const body = await readJson(req);
    if (!body.ok) return this.#refuse(res, 400, `bad request body (${body.reason})`);
    if (!ID_RE.test(id)) return sendJson(res, 404, { outcome: 'expired', message: 'this approval is unknown or has expired; nothing was approved' });
    if (action === '/options') return this.#options(res, id);
    if (action === '/deny') return this.#deny(res, id);
    return this.#assertion(res, id, body.value);
  }

  #refuse(res: ServerResponse, status: number, reason: string): void {
    this.#emit({ type: 'approval-refused', reason });
    sendJson(res, status, { outcome: 'refused', message: `${reason}; nothing was approved` });
  }

  async #page(res: ServerResponse, id: string): Promise<void> {
    const nowMs = this.#now();
    const record = ID_RE.test(id) ? await this.store.approvalById(id, nowMs) : undefined;
    if (record === undefined) {
      return send(
        res,
        404,
        'text/html; charset=utf-8',
        layout('Approval expired', '', '<h1>Approval</h1>\n<p id="outcome" class="outcome expired">expired: this approval is unknown or has expired; nothing can be approved here.</p>'),
      );
    }
    const view = JSON.parse(record.view) as ApprovalView;
    const decided =
      record.status === 'approved'
        ? `approved by ${escapeHtml(record.approver)}`
        : record.status === 'declined'
          ? 'denied: nothing will be done'
          : '';
    const values = view.values.map((v) => `<li>${escapeHtml(v.label)}: ${questionHtml(v.text)}</li>`).join('\n');
    const main = `<h1>Approve this tool call?</h1>
<dl class="facts">
<dt>Server</dt><dd>${escapeHtml(view.audience)}</dd>
<dt>Principal</dt><dd>${escapeHtml(view.principal)}</dd>
<dt>Tool</dt><dd><code>${escapeHtml(view.tool)}</code></dd>
<dt>Time left</dt><dd id="time-left" data-seconds="${Math.max(0, Math.floor((record.expiresAtMs - nowMs) / 1000))}">${minutes(record.expiresAtMs - nowMs)}</dd>
</dl>
<p class="question" id="question">${questionHtml(view.question)}</p>
<h2>Every value, uncut</h2>
<ul class="values" id="values">
${values}
</ul>
${
  record.status === 'pending'
    ? `<div class="actions"><button id="approve" type="button">Approve with passkey</button><button id="deny" type="button">Deny</button></div>
<p id="outcome" class="outcome" role="status"></p>
<p class="note">Approving asks your passkey (with user verification). The tool call then runs once, when the client retries it.</p>`
    : `<p id="outcome" class="outcome ${record.status === 'approved' ? 'approved' : 'denied'}" role="status">${decided}</p>`
}`;
    send(res, 200, 'text/html; charset=utf-8', layout('Approve a tool call', `data-base="/approve/${escapeHtml(id)}"`, main));
  }

  async #pending(res: ServerResponse, id: string): Promise<ApprovalRecord | undefined> {
    const record = await this.store.approvalById(id, this.#now());
    if (record === undefined) {
      sendJson(res, 404, { outcome: 'expired', message: 'this approval is unknown or has expired; nothing was approved' });
      return undefined;
    }
    if (record.status !== 'pending') {
      sendJson(res, 409, { outcome: record.status === 'approved' ? 'approved' : 'denied', message: 'this approval was already decided' });
      return undefined;
    }
    return record;
  }

  async #options(res: ServerResponse, id: string): Promise<void> {
    const record = await this.#pending(res, id);
    if (record === undefined) return;
    const allowed = approversFor(this.#approvers, record.principal);
    if (allowed.length === 0) return this.#refuse(res, 403, 'no approver is allowed for this principal');
    const challenge = randomBytes(32);
    const nowMs = this.#now();
    await this.store.putChallenge(challenge.toString('base64url'), id, Math.min(nowMs + CHALLENGE_TTL_MS, record.expiresAtMs), nowMs);
    const options = await generateAuthenticationOptions({
      rpID: this.rpId,
      challenge: new Uint8Array(challenge),
      userVerification: 'required',
      timeout: CHALLENGE_TTL_MS,
      allowCredentials: allowed.map((a) => ({ id: a.credentialId, transports: a.transports as never })),
    });
    sendJson(res, 200, { options });
  }

  async #deny(res: ServerResponse, id: string): Promise<void> {
    const outcome = await this.store.decideApproval(id, { status: 'declined', approver: '', credentialId: '' }, this.#now());
    if (outcome === 'decided') {
      this.#decided.emit(id);
      this.#emit({ type: 'approval-declined' });
      return sendJson(res, 200, { outcome: 'denied', message: 'nothing will be done' });
    }
    if (outcome === 'already-decided') return sendJson(res, 409, { outcome: 'refused', message: 'this approval was already decided' });
    return sendJson(res, 404, { outcome: 'expired', message: 'this approval is unknown or has expired' });
  }

  async #assertion(res: ServerResponse, id: string, body: Record<string, unknown>): Promise<void> {
    const response = body as unknown as AuthenticationResponseJSON;
    // 1. The challenge the browser signed, read from clientDataJSON, must be one we issued for THIS id; taken once.
    let challenge: string | undefined;
    try {
      const clientData = JSON.parse(Buffer.from(String(response.response?.clientDataJSON ?? ''), 'base64url').toString('utf8')) as { challenge?: unknown };
      challenge = typeof clientData.challenge === 'string' ? clientData.challenge : undefined;
    } catch {
      challenge = undefined;
    }
    if (challenge === undefined || !/^[A-Za-z0-9_-]{43}$/.test(challenge)) return this.#refuse(res, 400, 'no valid WebAuthn assertion');
    const challengeFor = await this.store.takeChallenge(challenge, this.#now());
    if (challengeFor !== id) return this.#refuse(res, 403, 'the assertion was not made for this approval (unknown, used or expired challenge)');
    const record = await this.#pending(res, id);
    if (record === undefined) return;
    // 2. The credential must belong to an approver allowed for the principal who asked.
    const approver = approversFor(this.#approvers, record.principal).find((a) => a.credentialId === response.id);
    if (approver === undefined) return this.#refuse(res, 403, 'this passkey is not an approver for this principal');
    // 3. Signature, exact origin (scheme, host, port), RP ID, challenge, user verification.
    let verified;
    try {
      verified = await verifyAuthenticationResponse({
        response,
        expectedChallenge: challenge,
        expectedOrigin: this.origin,
        expectedRPID: this.rpId,
        expectedType: 'webauthn.get',
        requireUserVerification: true,
        credential: {
          id: approver.credentialId,
          publicKey: new Uint8Array(Buffer.from(approver.publicKey, 'base64url')),
          counter: approver.counter,
        },
      });
    } catch (e) {
      return this.#refuse(res, 403, `the passkey assertion did not verify (${(e as Error).message.slice(0, 200)})`);
    }
    if (!verified.verified || !verified.authenticationInfo.userVerified) return this.#refuse(res, 403, 'the passkey assertion did not verify');
    // 4. The signature counter moves forward atomically (a replayed or cloned authenticator's does not).
    if (!(await this.store.advanceCounter(approver.credentialId, verified.authenticationInfo.newCounter, approver.counter))) {
      return this.#refuse(res, 403, 'the signature counter did not move forward (a replayed assertion or a cloned authenticator)');
    }
    // 5. Only then: approved, once, with who approved.
    const outcome = await this.store.decideApproval(id, { status: 'approved', approver: approver.name, credentialId: approver.credentialId }, this.#now());
    if (outcome !== 'decided') return this.#refuse(res, 409, 'this approval was already decided or has expired');
    this.#decided.emit(id);
    this.#emit({ type: 'approval-approved', approver: approver.name });
    sendJson(res, 200, { outcome: 'approved', message: `approved by ${approver.name}; the tool call runs once when the client retries it` });
  }
}

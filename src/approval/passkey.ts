/**
 * Passkey approval: the out-of-band page a confirmation is approved on (MCP
 * spec 2026-07-28, client/elicitation, URL mode), where approving requires a
 * WebAuthn assertion with user verification (W3C Web Authentication Level 3,
 * §7.2) from an enrolled approver allowed for the calling principal.
 *
 * Routes, over stdio on its own loopback listener (see listener.ts), over `--http` on the
 * server's listener behind the public URL ({@link PasskeyApproval.fetch}):
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
 * equal to the page's host (behind a public URL: its host name, any port).
 * No route asks for a bearer token: the passkey assertion is the proof.
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
import { approversFor, type ApproversFile } from './approvers.js';
import { assetAt, escapeHtml, layout } from './html.js';
import { hostnameMatches, listenLoopback, readJson, SECURITY_HEADERS, type LoopbackListener } from './listener.js';
import type { ApprovalRecord, ApprovalStore } from '../store/approvalStore.js';
import type { ConfirmStore } from '../store/confirmStore.js';
import { DEFAULT_APPROVAL_WAIT_SECONDS } from '../defaults.js';

export { DEFAULT_APPROVAL_WAIT_SECONDS };
import { parsePublicUrl } from './publicUrl.js';
import { renderValue } from '../prompt/render.js';
import { authenticationOptions, CHALLENGE_RE, CHALLENGE_TTL_MS, claimedChallenge, libraryReason, newChallenge, verifyAssertion } from './webauthn.js';

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
  /** Where approvals, challenges and counters live: the confirmation's store (MemoryLedger, SqliteLedger, RedisLedger). */
  store: ConfirmStore;
  /** The approvers, loaded once at start-up (see `loadApproversForServer`). */
  approvers: ApproversFile;
  /** The port on 127.0.0.1 and ::1 (stdio; not with `publicUrl`). Defaults to 0 (a random free port). */
  port?: number;
  /**
   * Serve the page on your own HTTP server instead of a loopback listener (`mcp-confirm --http
   * --public-url URL`): the origin browsers use, `scheme://host[:port]`. The WebAuthn origin is its
   * origin, the RP ID its host name (a DNS name, never an IP address); approval URLs are
   * `ORIGIN/approve/ID`. No listener is started: route {@link PasskeyApproval.servesPath} paths to
   * {@link PasskeyApproval.fetch}. Defaults to none (a loopback listener, origin `http://localhost:PORT`).
   */
  publicUrl?: string | URL;
  /**
   * How long round 2 waits for the page's decision, in whole seconds, 0 to 3,600. Defaults to
   * {@link DEFAULT_APPROVAL_WAIT_SECONDS} (45). 0 answers at once. Keep it below the clients' request
   * timeout (the MCP SDKs' default is 60 s), or a client gives up before it is asked again.
   */
  waitSeconds?: number;
  /** The clock, Unix milliseconds, for every stored time (challenges, decisions, expiry). Defaults to `Date.now`. */
  now?: () => number;
  /** How often a waiting round 2 re-reads a shared store, in milliseconds. Defaults to 250. */
  pollIntervalMs?: number;
  /** Diagnostics (stderr). Defaults to none. */
  onEvent?: (event: ApprovalEvent) => void;
}

export { REDEEM_WITHIN_MS } from '../store/approvalStore.js';
export { CHALLENGE_TTL_MS };

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
  readonly store: ConfirmStore;
  readonly #approvers: ApproversFile;
  readonly #now: () => number;
  readonly #poll: number;
  readonly #emit: (event: ApprovalEvent) => void;
  readonly #decided = new EventEmitter();
  /** Served on an HTTP server behind a public URL (Host compared by host name) rather than our own loopback listener (exact Host). */
  readonly #behindPublicUrl: boolean;
  #listener: LoopbackListener | undefined;

  private constructor(options: PasskeyApprovalOptions, listener: LoopbackListener | undefined, origin: string) {
    this.store = options.store;
    this.#approvers = options.approvers;
    this.#now = options.now ?? Date.now;
    this.#poll = options.pollIntervalMs ?? 250;
    this.waitMs = (options.waitSeconds ?? DEFAULT_APPROVAL_WAIT_SECONDS) * 1000;
    this.#listener = listener;
    this.origin = origin;
    const url = new URL(origin);
    this.port = listener?.port ?? Number(url.port || (url.protocol === 'https:' ? 443 : 80));
    this.rpId = url.hostname;
    this.#behindPublicUrl = listener === undefined;
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
   * Starts the page: over stdio on `127.0.0.1:PORT` and `[::1]:PORT` (origin `http://localhost:PORT`,
   * RP ID `localhost`); with `publicUrl`, without a listener, for your HTTP server to route to
   * {@link PasskeyApproval.fetch} (origin and RP ID from the public URL).
   *
   * @throws {RangeError} when `waitSeconds` is not a whole number from 0 to 3,600, `port` is given with
   *   `publicUrl`, or the approvers were enrolled for another RP ID (the message names them).
   * @throws {PublicUrlError} when `publicUrl` is not an http(s) origin with a DNS host name.
   * @throws {ListenError} naming the address when either loopback address is taken.
   * @example
   * const approval = await PasskeyApproval.start({ store, approvers: await loadApproversForServer(path, roots) });
   * const confirmation = await createConfirmation({ approval }); // its jtis in approval.store too
   */
  static async start(options: PasskeyApprovalOptions): Promise<PasskeyApproval> {
    const wait = options.waitSeconds ?? DEFAULT_APPROVAL_WAIT_SECONDS;
    if (!Number.isSafeInteger(wait) || wait < 0 || wait > 3_600) throw new RangeError('waitSeconds must be a whole number of seconds from 0 to 3600');
    const publicUrl = options.publicUrl === undefined ? undefined : parsePublicUrl(String(options.publicUrl));
    const rpId = publicUrl?.hostname ?? 'localhost';
    if (options.approvers.rpId !== rpId) {
      const names = options.approvers.approvers.map((a) => JSON.stringify(a.name)).join(', ');
      throw new RangeError(
        `the approvers file's approvers (${names}) were enrolled for RP ID ${JSON.stringify(options.approvers.rpId)}, but this page's RP ID is ${JSON.stringify(rpId)}` +
          (publicUrl ? ` (from the public URL ${publicUrl.origin}); enrol them again with: mcp-confirm approvers enroll --public-url ${publicUrl.origin} …` : ' (over stdio); enrol them again without --public-url'),
      );
    }
    if (publicUrl !== undefined) {
      if (options.port !== undefined) throw new RangeError('port is for the loopback listener; with publicUrl the page is served by your HTTP server');
      return new PasskeyApproval(options, undefined, publicUrl.origin);
    }
    let self: PasskeyApproval | undefined;
    const listener = await listenLoopback(options.port ?? 0, (req, res) => {
      if (self === undefined) {
        writeAnswer(res, { status: 503, type: 'text/plain; charset=utf-8', body: 'starting' }, req.method);
        return;
      }
      void self.handle(req, res);
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

  /**
   * Whether a request path belongs to the page (`/approve`, `/approve/…`, `/assets/page.js`,
   * `/assets/page.css`): what an HTTP server routes to {@link PasskeyApproval.fetch}.
   */
  servesPath(pathname: string): boolean {
    return pathname === '/approve' || pathname.startsWith('/approve/') || assetAt(pathname) !== undefined;
  }

  /**
   * Answers one request of the page as a web-standard `fetch` handler (for `--http`: the
   * application's Host/Origin checks run before it). No bearer token is asked for: a browser
   * opening the link has none, and the passkey assertion is the proof; the id lets one see the
   * question and deny, never approve.
   */
  async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const answer = await this.#answerSafely({
      method: request.method,
      path: url.pathname,
      host: request.headers.get('host'),
      origin: request.headers.get('origin'),
      body: () => readJson(request.body as AsyncIterable<Uint8Array> | null),
    });
    const headers = { ...SECURITY_HEADERS, 'Content-Type': answer.type };
    return new Response(request.method === 'HEAD' ? null : answer.body, { status: answer.status, headers });
  }

  /** Answers one request of the page (`node:http`, the stdio loopback listener). */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const answer = await this.#answerSafely({
      method: req.method ?? 'GET',
      path: (req.url ?? '/').split('?')[0] ?? '/',
      host: req.headers.host,
      origin: req.headers.origin,
      body: () => readJson(req),
    });
    writeAnswer(res, answer, req.method);
  }

  async #answerSafely(req: PageRequest): Promise<Answer> {
    try {
      return await this.#answer(req);
    } catch {
      return json(500, { outcome: 'refused', message: 'internal error; nothing was approved' });
    }
  }

  async #answer(req: PageRequest): Promise<Answer> {
    // 1. Only our own host: a DNS-rebinding page (another name resolving to us) gets nothing. Over stdio the
    //    exact `localhost:PORT`; behind a public URL its host name (a TLS proxy in front may use another port).
    const hostOk = this.#behindPublicUrl ? hostnameMatches(req.host, this.origin) : req.host === new URL(this.origin).host;
    if (!hostOk) return text(421, 'wrong host');
    const path = req.path;
    if (req.method === 'GET' || req.method === 'HEAD') {
      const asset = assetAt(path);
      if (asset !== undefined) return { status: 200, ...asset };
    }
    const m = /^\/approve\/([^/]+)(\/options|\/assertion|\/deny)?$/.exec(path);
    if (m === null) return text(404, 'not found');
    const id = m[1]!;
    const action = m[2];
    if (action === undefined) {
      if (req.method !== 'GET' && req.method !== 'HEAD') return text(405, 'method not allowed');
      return this.#page(id);
    }
    if (req.method !== 'POST') return text(405, 'method not allowed');
    // 2. Every POST comes from the page itself: Origin exactly ours (scheme, host and port), never absent.
    if (req.origin !== this.origin) return this.#refuse(403, 'this request did not come from the approval page');
    const body = await req.body();
    if (!body.ok) return this.#refuse(400, `bad request body (${body.reason})`);
    if (!ID_RE.test(id)) return json(404, { outcome: 'expired', message: 'this approval is unknown or has expired; nothing was approved' });
    if (action === '/options') return this.#options(id);
    if (action === '/deny') return this.#deny(id);
    return this.#assertion(id, body.value);
  }

  #refuse(status: number, reason: string): Answer {
    this.#emit({ type: 'approval-refused', reason });
    return json(status, { outcome: 'refused', message: `${reason}; nothing was approved` });
  }

  async #page(id: string): Promise<Answer> {
    const nowMs = this.#now();
    const record = ID_RE.test(id) ? await this.store.approvalById(id, nowMs) : undefined;
    if (record === undefined) {
      return html(
        404,
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
<dt>Principal</dt><dd>${principalHtml(view.principal)}</dd>
<dt>Tool</dt><dd>${questionHtml(renderValue(view.tool, UNCUT))}</dd>
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
    return html(200, layout('Approve a tool call', `data-base="/approve/${escapeHtml(id)}"`, main));
  }

  /** The approval when it is pending; else the answer to give. */
  async #pending(id: string): Promise<ApprovalRecord | Answer> {
    const record = await this.store.approvalById(id, this.#now());
    if (record === undefined) return json(404, { outcome: 'expired', message: 'this approval is unknown or has expired; nothing was approved' });
    if (record.status !== 'pending') {
      return json(409, { outcome: record.status === 'approved' ? 'approved' : 'denied', message: 'this approval was already decided' });
    }
    return record;
  }

  async #options(id: string): Promise<Answer> {
    const record = await this.#pending(id);
    if (!isRecord(record)) return record;
    const allowed = approversFor(this.#approvers, record.principal);
    if (allowed.length === 0) return this.#refuse(403, 'no approver is allowed for this principal');
    const challenge = newChallenge();
    const nowMs = this.#now();
    await this.store.putChallenge(challenge, id, Math.min(nowMs + CHALLENGE_TTL_MS, record.expiresAtMs), nowMs);
    return json(200, { options: await authenticationOptions(this.rpId, challenge, allowed) });
  }

  async #deny(id: string): Promise<Answer> {
    const outcome = await this.store.decideApproval(id, { status: 'declined', approver: '', credentialId: '' }, this.#now());
    if (outcome === 'decided') {
      this.#decided.emit(id);
      this.#emit({ type: 'approval-declined' });
      return json(200, { outcome: 'denied', message: 'nothing will be done' });
    }
    if (outcome === 'already-decided') return json(409, { outcome: 'refused', message: 'this approval was already decided' });
    return json(404, { outcome: 'expired', message: 'this approval is unknown or has expired' });
  }

  async #assertion(id: string, body: Record<string, unknown>): Promise<Answer> {
    // 1. The challenge the browser signed, read from clientDataJSON, must be one we issued for THIS id; taken once.
    const challenge = claimedChallenge(body);
    if (challenge === undefined || !CHALLENGE_RE.test(challenge)) return this.#refuse(400, 'no valid WebAuthn assertion');
    const challengeFor = await this.store.takeChallenge(challenge, this.#now());
    if (challengeFor !== id) return this.#refuse(403, 'the assertion was not made for this approval (unknown, used or expired challenge)');
    const record = await this.#pending(id);
    if (!isRecord(record)) return record;
    // 2. The credential must belong to an approver allowed for the principal who asked.
    const approver = approversFor(this.#approvers, record.principal).find((a) => a.credentialId === body.id);
    if (approver === undefined) return this.#refuse(403, 'this passkey is not an approver for this principal');
    // 3. Signature, exact origin (scheme, host, port), RP ID, challenge, user verification.
    let newCounter: number | undefined;
    try {
      newCounter = await verifyAssertion(body, { origin: this.origin, rpId: this.rpId, challenge }, approver);
    } catch (e) {
      return this.#refuse(403, `the passkey assertion did not verify (${libraryReason(e)})`);
    }
    if (newCounter === undefined) return this.#refuse(403, 'the passkey assertion did not verify');
    // 4. The signature counter moves forward atomically (a replayed or cloned authenticator's does not).
    if (!(await this.store.advanceCounter(approver.credentialId, newCounter, approver.counter))) {
      return this.#refuse(403, 'the signature counter did not move forward (a replayed assertion or a cloned authenticator)');
    }
    // 5. Only then: approved, once, with who approved.
    const outcome = await this.store.decideApproval(id, { status: 'approved', approver: approver.name, credentialId: approver.credentialId }, this.#now());
    if (outcome !== 'decided') return this.#refuse(409, 'this approval was already decided or has expired');
    this.#decided.emit(id);
    this.#emit({ type: 'approval-approved', approver: approver.name });
    return json(200, { outcome: 'approved', message: `approved by ${approver.name}; the tool call runs once when the client retries it` });
  }
}

/** One request of the page, whatever server carried it. */
interface PageRequest {
  method: string;
  /** The path, without the query. */
  path: string;
  host: string | undefined | null;
  origin: string | undefined | null;
  body: () => ReturnType<typeof readJson>;
}

/** One answer of the page; the security headers are added when it is written. */
interface Answer {
  status: number;
  type: string;
  body: string;
}

function text(status: number, body: string): Answer {
  return { status, type: 'text/plain; charset=utf-8', body };
}

function html(status: number, body: string): Answer {
  return { status, type: 'text/html; charset=utf-8', body };
}

function json(status: number, value: unknown): Answer {
  return { status, type: 'application/json; charset=utf-8', body: JSON.stringify(value) };
}

function isRecord(value: ApprovalRecord | Answer): value is ApprovalRecord {
  return typeof (value as ApprovalRecord).jti === 'string';
}

function writeAnswer(res: ServerResponse, answer: Answer, method: string | undefined): void {
  res.writeHead(answer.status, { ...SECURITY_HEADERS, 'Content-Type': answer.type, 'Content-Length': Buffer.byteLength(answer.body) });
  res.end(method === 'HEAD' ? undefined : answer.body);
}

/**
 * Options that render a value whole (the page shows every value uncut; the question may cut).
 * The tool name is rendered too: a proxied upstream's tool name is untrusted text.
 */
const UNCUT = { maxGraphemes: Number.MAX_SAFE_INTEGER };

/**
 * The principal as the page shows it: `local`, or for a verified token (`["jwt", iss, sub]`, see
 * `jwtPrincipalOf`) the subject and its issuer. Escaped; never markup.
 */
function principalHtml(principal: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(principal);
  } catch {
    return escapeHtml(principal);
  }
  if (Array.isArray(parsed) && parsed.length === 3 && parsed[0] === 'jwt' && typeof parsed[1] === 'string' && typeof parsed[2] === 'string') {
    return `${questionHtml(renderValue(parsed[2], UNCUT))} (issuer ${questionHtml(renderValue(parsed[1], UNCUT))})`;
  }
  return escapeHtml(principal);
}

/**
 * The approval page: its routes and its HTML (MCP spec 2026-07-28, client/elicitation, URL mode).
 * Approving requires a WebAuthn assertion with user verification (W3C Web Authentication Level 3,
 * §7.2, checked in `webauthn.ts`) from an enrolled approver allowed for the calling principal.
 *
 * Routes, over stdio on the approval's own loopback listener (`listener.ts`), over `--http` on the
 * server's listener behind the public URL (`PasskeyApproval.fetch`):
 * - `GET /approve/ID`: the page. Shows the audience, principal, tool, question,
 *   each value uncut, and the time left. Changes nothing.
 * - `POST /approve/ID/options`: a single-use challenge (stored in the
 *   {@link ApprovalStore}, so any replica can check it) and the allowed credentials.
 * - `POST /approve/ID/assertion`: takes the challenge (once), verifies the
 *   assertion (exact origin with port, RP ID, challenge, user verified) against the approvers
 *   allowed for the principal, moves the signature counter forward atomically, then has the
 *   approval recorded approved with the approver's name and credential id.
 *   With a quorum (the record's `approvalsRequired` N > 1), each verified assertion is counted
 *   instead (`PageOptions.count`): an approver counts once (by name and credential), the page shows
 *   `K of N approvals` with who approved so far, and the N-th distinct approver approves it.
 * - `POST /approve/ID/deny`: has it recorded declined (with a quorum too: one Deny ends it). With {@link PageOptions.denyNeedsPasskey}
 *   (notifications on: the link may reach people who are not approvers), only with a WebAuthn
 *   assertion of an approver allowed for the principal, over a challenge from
 *   `POST /approve/ID/deny/options` (kept apart from the approve challenges, so an assertion made
 *   to deny never approves, nor one made to approve denies).
 * - `POST /approve/ID/revoke`: revokes the grant the approved call created (the id attached to
 *   the approval record, never one the request names), then reports it ({@link PageOptions.revoked}).
 * - `GET /assets/page.js`, `GET /assets/page.css`: the script and style (`html.ts`).
 * With a grant offered (`ApprovalView.grant`), the page has two approve buttons, "Approve this call"
 * and "Approve and allow similar calls" (the offer's line shown whole beside it); both run the same
 * assertion, and the button's choice is recorded with the approval as its `scope` (the only place a
 * scope comes from with passkey approval). Without an offer, one "Approve with passkey" button.
 * Every POST needs `Origin` equal to the page origin, and every request `Host`
 * equal to the page's host (behind a public URL: its host name, any port).
 * No route asks for a bearer token: a browser opening the link has none, and the passkey
 * assertion is the proof; the id lets one see the question and deny, never approve.
 *
 * The page reads approvals and keeps challenges and counters in the store; a decision goes
 * through the approval that serves the page (`PageOptions.decide`), which wakes whoever waits for it.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { approversFor, type ApproversFile } from './approvers.js';
import { assetAt, escapeHtml, layout } from './html.js';
import { hostnameMatches, readJson, SECURITY_HEADERS, send } from './listener.js';
import {
  authenticationOptions,
  CHALLENGE_RE,
  CHALLENGE_TTL_MS,
  claimedChallenge,
  libraryReason,
  newChallenge,
  verifyAssertion,
} from './webauthn.js';
import type {
  ApprovalRecord,
  ApprovalScope,
  ApprovalStore,
  ApprovalVote,
  CountOutcome,
  DecideOutcome,
} from '../store/approvalStore.js';
import type { GrantStore } from '../store/grantStore.js';
import { renderValue } from '../prompt/render.js';
import { jwtPrincipalParts } from '../principals.js';

/** What the page shows, stored with the approval as JSON text. All strings are already rendered (escaped) values. */
export interface ApprovalView {
  audience: string;
  principal: string;
  tool: string;
  /** The rendered question, as the client's elicitation carries it (code spans in backticks). */
  question: string;
  /** Each value uncut and rendered, with a label (e.g. `file`, `requested as`). */
  values: Array<{ label: string; text: string }>;
  /**
   * The grant offered with the question: its line as the question carries it (rendered, code spans
   * in backticks). When present the page offers "Approve and allow similar calls" beside "Approve
   * this call". Absent when no grant is offered.
   */
  grant?: string;
  /**
   * `true` when the call is a plan (`confirm_plan`: several calls approved at once): the page is
   * titled "Approve this plan?" instead of "Approve this tool call?". Absent for one call.
   */
  plan?: boolean;
}

/** Something worth a line on stderr. Never carries secrets. */
export type ApprovalEvent =
  | { type: 'approval-approved'; approver: string; scope?: ApprovalScope }
  /** With a quorum: `approver`'s approval was counted, `approvals` of `required` so far (not yet approved). */
  | { type: 'approval-counted'; approver: string; approvals: number; required: number }
  /** Denied on the page; `approver` when Deny needed a passkey (the page's `denyNeedsPasskey` option). */
  | { type: 'approval-declined'; approver?: string }
  | { type: 'approval-refused'; reason: string }
  /** The grant `grant` (its id) was revoked on the page. */
  | { type: 'grant-revoked'; grant: string };

/** A grant revoked on the approval page, as the page's `revoked` callback receives it. */
export interface GrantRevokedOnPage {
  /** The grant's id. */
  grant: string;
  /** The approval whose call created it: its `jti`, and its principal (the principal string, not its tag). */
  jti: string;
  principal: string;
  /** The server and tool the page showed (`ApprovalView.audience`, `ApprovalView.tool`). */
  audience: string;
  tool: string;
  /** Who revoked it: `null`, since the Revoke button asks for no passkey (it only takes a permission away). */
  approver: string | null;
}

/** A decision of the page: `approved` with the approver's name and credential id, or `declined` (both ''). */
export type PageDecision = Parameters<ApprovalStore['decideApproval']>[1];

/** What an {@link ApprovalPage} serves with. */
export interface PageOptions {
  /** Where approvals are read, challenges kept and signature counters moved, and grants revoked. */
  store: ApprovalStore & Pick<GrantStore, 'revokeGrant'>;
  /** The approvers, loaded once at start-up. */
  approvers: ApproversFile;
  /** The page origin (`scheme://host[:port]`): every POST's `Origin`, and the WebAuthn origin. */
  origin: string;
  /** The WebAuthn RP ID: the origin's host name. */
  rpId: string;
  /**
   * Served on an HTTP server behind a public URL: `Host` is compared by host name (a TLS proxy in
   * front may use another port). Otherwise (our own loopback listener) exactly.
   */
  behindPublicUrl: boolean;
  /** The clock, Unix milliseconds. */
  now: () => number;
  /** Records a decision once (at the time of the call), and wakes whoever waits for it; the store's outcome. */
  decide: (id: string, decision: PageDecision) => Promise<DecideOutcome>;
  /**
   * Deny needs an enrolled approver's passkey, as approving does (with notifications: a link sent
   * to a channel must not let whoever reads it veto). Defaults to `false` (anyone holding the link
   * may deny).
   */
  denyNeedsPasskey?: boolean;
  /**
   * Counts one approver's approval of a quorum (at the time of the call), and wakes whoever waits
   * when it completes it; the store's outcome. Defaults to the store's `countApproval`.
   */
  count?: (id: string, vote: ApprovalVote) => Promise<CountOutcome>;
  /** Diagnostics (stderr); must not throw. */
  emit: (event: ApprovalEvent) => void;
  /** Told of each grant revoked on the page, after the store revoked it (e.g. to write its audit line); awaited; must not throw. */
  revoked: (event: GrantRevokedOnPage) => Promise<void>;
}

const ID_RE = /^[A-Za-z0-9_-]{22,64}$/;

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
 * The approval page (one per `PasskeyApproval`): answers its routes over `node:http`
 * ({@link ApprovalPage.handle}) or as a `fetch` handler ({@link ApprovalPage.fetch}). Every
 * failure inside a route is answered 500 with nothing approved.
 */
export class ApprovalPage {
  readonly #store: PageOptions['store'];
  readonly #approvers: ApproversFile;
  readonly #origin: string;
  readonly #rpId: string;
  readonly #behindPublicUrl: boolean;
  readonly #now: () => number;
  readonly #decide: PageOptions['decide'];
  readonly #count: NonNullable<PageOptions['count']>;
  readonly #emit: PageOptions['emit'];
  readonly #revoked: PageOptions['revoked'];
  readonly #denyNeedsPasskey: boolean;

  constructor(options: PageOptions) {
    this.#store = options.store;
    this.#approvers = options.approvers;
    this.#origin = options.origin;
    this.#rpId = options.rpId;
    this.#behindPublicUrl = options.behindPublicUrl;
    this.#now = options.now;
    this.#decide = options.decide;
    this.#count = options.count ?? ((id, vote) => options.store.countApproval(id, vote, options.now()));
    this.#emit = options.emit;
    this.#revoked = options.revoked;
    this.#denyNeedsPasskey = options.denyNeedsPasskey === true;
  }

  /** Whether a request path belongs to the page (`/approve`, `/approve/…`, `/assets/page.js`, `/assets/page.css`). */
  servesPath(pathname: string): boolean {
    return pathname === '/approve' || pathname.startsWith('/approve/') || assetAt(pathname) !== undefined;
  }

  /** Answers one request of the page as a web-standard `fetch` handler (behind a public URL, on your HTTP server). */
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
    send(res, answer.status, answer.type, answer.body, req.method);
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
    const hostOk = this.#behindPublicUrl
      ? hostnameMatches(req.host, this.#origin)
      : req.host === new URL(this.#origin).host;
    if (!hostOk) return text(421, 'wrong host');
    const path = req.path;
    if (req.method === 'GET' || req.method === 'HEAD') {
      const asset = assetAt(path);
      if (asset !== undefined) return { status: 200, ...asset };
    }
    const m = /^\/approve\/([^/]+)(\/options|\/assertion|\/deny\/options|\/deny|\/revoke)?$/.exec(path);
    if (m === null) return text(404, 'not found');
    const id = m[1]!;
    const action = m[2];
    if (action === undefined) {
      if (req.method !== 'GET' && req.method !== 'HEAD') return text(405, 'method not allowed');
      return this.#page(id);
    }
    if (req.method !== 'POST') return text(405, 'method not allowed');
    // 2. Every POST comes from the page itself: Origin exactly ours (scheme, host and port), never absent.
    if (req.origin !== this.#origin) return this.#refuse(403, 'this request did not come from the approval page');
    const body = await req.body();
    if (!body.ok) return this.#refuse(400, `bad request body (${body.reason})`);
    if (!ID_RE.test(id))
      return json(404, {
        outcome: 'expired',
        message: 'this approval is unknown or has expired; nothing was approved',
      });
    if (action === '/options') return this.#options(id);
    if (action === '/deny/options') return this.#denyOptions(id);
    if (action === '/deny') return this.#denyNeedsPasskey ? this.#denyWithPasskey(id, body.value) : this.#deny(id);
    if (action === '/revoke') return this.#revoke(id);
    return this.#assertion(id, body.value);
  }

  #refuse(status: number, reason: string): Answer {
    this.#emit({ type: 'approval-refused', reason });
    return json(status, { outcome: 'refused', message: `${reason}; nothing was approved` });
  }

  async #page(id: string): Promise<Answer> {
    const nowMs = this.#now();
    const record = ID_RE.test(id) ? await this.#store.approvalById(id, nowMs) : undefined;
    if (record === undefined) {
      return html(
        404,
        layout(
          'Approval expired',
          '',
          '<h1>Approval</h1>\n<p id="outcome" class="outcome expired">expired: this approval is unknown or has expired; nothing can be approved here.</p>',
        ),
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
    const offered = typeof view.grant === 'string' && view.grant !== '' ? view.grant : undefined;
    const isPlan = view.plan === true;
    const granting = grantHtml(record, offered);
    // The offer is shown once: beside its button (pending) or in the grant's section (decided), not in the question too.
    const shownQuestion =
      record.status === 'pending' || granting !== '' ? withoutOffer(view.question, offered) : view.question;
    const main = `<h1>${isPlan ? 'Approve this plan?' : 'Approve this tool call?'}</h1>
<dl class="facts">
<dt>Server</dt><dd>${escapeHtml(view.audience)}</dd>
<dt>Principal</dt><dd>${principalHtml(view.principal)}</dd>
<dt>Tool</dt><dd>${questionHtml(renderValue(view.tool, UNCUT))}</dd>
<dt>Time left</dt><dd id="time-left" data-seconds="${Math.max(0, Math.floor((record.expiresAtMs - nowMs) / 1000))}">${minutes(record.expiresAtMs - nowMs)}</dd>
</dl>
<p class="question" id="question">${questionHtml(shownQuestion)}</p>${quorumHtml(record)}
<h2>Every value, uncut</h2>
<ul class="values" id="values">
${values}
</ul>
${
  record.status !== 'pending'
    ? `<p id="outcome" class="outcome ${record.status === 'approved' ? 'approved' : 'denied'}" role="status">${decided}</p>${granting}`
    : offered === undefined
      ? `<div class="actions"><button id="approve" type="button">Approve with passkey</button><button id="deny" type="button"${this.#denyAttrs()}>Deny</button></div>
<p id="outcome" class="outcome" role="status"></p>
<p class="note">Approving asks your passkey (with user verification). ${isPlan ? 'The plan is stored' : 'The tool call then runs once'}, when the client retries it${(record.approvalsRequired ?? 1) > 1 ? ` after ${record.approvalsRequired} distinct approvers have approved` : ''}${isPlan ? '; approving runs nothing itself, and each call listed may then be made once, exactly as listed, without another question' : ''}.</p>${this.#denyNote()}`
      : `<div class="actions"><button id="approve" type="button">Approve this call</button><button id="deny" type="button"${this.#denyAttrs()}>Deny</button></div>
<div class="grant-offer">
<button id="approve-grant" type="button" aria-describedby="grant">Approve and allow similar calls</button>
<p class="grant" id="grant">${questionHtml(offered)}</p>
</div>
<p id="outcome" class="outcome" role="status"></p>
<p class="note">Either button asks your passkey (with user verification). The tool call then runs once, when the client retries it; with "Approve and allow similar calls" that retry also creates the grant above, and the calls it covers then run without asking until it ends. This page can revoke it.</p>${this.#denyNote()}`
}`;
    return html(
      200,
      layout(isPlan ? 'Approve a plan' : 'Approve a tool call', `data-base="/approve/${escapeHtml(id)}"`, main),
    );
  }

  /** The approval when it is pending; else the answer to give. */
  async #pending(id: string): Promise<ApprovalRecord | Answer> {
    const record = await this.#store.approvalById(id, this.#now());
    if (record === undefined)
      return json(404, {
        outcome: 'expired',
        message: 'this approval is unknown or has expired; nothing was approved',
      });
    if (record.status !== 'pending') {
      return json(409, {
        outcome: record.status === 'approved' ? 'approved' : 'denied',
        message: 'this approval was already decided',
      });
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
    await this.#store.putChallenge(challenge, id, Math.min(nowMs + CHALLENGE_TTL_MS, record.expiresAtMs), nowMs);
    return json(200, { options: await authenticationOptions(this.#rpId, challenge, allowed) });
  }

  /** The Deny button's attribute telling the script to ask the passkey first (with {@link PageOptions.denyNeedsPasskey}). */
  #denyAttrs(): string {
    return this.#denyNeedsPasskey ? ' data-passkey="required"' : '';
  }

  /** The note saying Deny asks a passkey too (with {@link PageOptions.denyNeedsPasskey}). */
  #denyNote(): string {
    return this.#denyNeedsPasskey
      ? '\n<p class="note" id="deny-note">Denying asks your passkey too: this link may have been sent to others through a notification channel.</p>'
      : '';
  }

  /** The challenge key of a Deny: apart from the approve challenges of the same approval (`:` is not in an id). */
  static #denyKey(id: string): string {
    return `deny:${id}`;
  }

  /** `POST /approve/ID/deny/options`: a single-use challenge for denying with a passkey, and the allowed credentials. */
  async #denyOptions(id: string): Promise<Answer> {
    if (!this.#denyNeedsPasskey) return text(404, 'not found');
    const record = await this.#pending(id);
    if (!isRecord(record)) return record;
    const allowed = approversFor(this.#approvers, record.principal);
    if (allowed.length === 0) return this.#refuse(403, 'no approver is allowed for this principal');
    const challenge = newChallenge();
    const nowMs = this.#now();
    await this.#store.putChallenge(
      challenge,
      ApprovalPage.#denyKey(id),
      Math.min(nowMs + CHALLENGE_TTL_MS, record.expiresAtMs),
      nowMs,
    );
    return json(200, { options: await authenticationOptions(this.#rpId, challenge, allowed) });
  }

  /**
   * `POST /approve/ID/deny` with {@link PageOptions.denyNeedsPasskey}: the same checks as approving
   * (a challenge issued to deny this approval, taken once; an approver allowed for the principal;
   * signature, exact origin, RP ID, user verification; the counter moved forward), then declined.
   */
  async #denyWithPasskey(id: string, body: Record<string, unknown>): Promise<Answer> {
    const refuse = (status: number, reason: string): Answer => {
      this.#emit({ type: 'approval-refused', reason });
      return json(status, { outcome: 'refused', message: `${reason}; nothing was denied` });
    };
    const challenge = claimedChallenge(body);
    if (challenge === undefined || !CHALLENGE_RE.test(challenge))
      return refuse(400, "denying needs an enrolled approver's passkey (notifications are on)");
    const challengeFor = await this.#store.takeChallenge(challenge, this.#now());
    if (challengeFor !== ApprovalPage.#denyKey(id))
      return refuse(403, 'the assertion was not made to deny this approval (unknown, used or expired challenge)');
    const record = await this.#pending(id);
    if (!isRecord(record)) return record;
    const approver = approversFor(this.#approvers, record.principal).find((a) => a.credentialId === body.id);
    if (approver === undefined) return refuse(403, 'this passkey is not an approver for this principal');
    let newCounter: number | undefined;
    try {
      newCounter = await verifyAssertion(body, { origin: this.#origin, rpId: this.#rpId, challenge }, approver);
    } catch (e) {
      return refuse(403, `the passkey assertion did not verify (${libraryReason(e)})`);
    }
    if (newCounter === undefined) return refuse(403, 'the passkey assertion did not verify');
    if (!(await this.#store.advanceCounter(approver.credentialId, newCounter, approver.counter)))
      return refuse(403, 'the signature counter did not move forward (a replayed assertion or a cloned authenticator)');
    const outcome = await this.#decide(id, { status: 'declined', approver: '', credentialId: '' });
    if (outcome !== 'decided') return refuse(409, 'this approval was already decided or has expired');
    this.#emit({ type: 'approval-declined', approver: approver.name });
    return json(200, { outcome: 'denied', message: `denied by ${approver.name}; nothing will be done` });
  }

  async #deny(id: string): Promise<Answer> {
    const outcome = await this.#decide(id, { status: 'declined', approver: '', credentialId: '' });
    if (outcome === 'decided') {
      this.#emit({ type: 'approval-declined' });
      return json(200, { outcome: 'denied', message: 'nothing will be done' });
    }
    if (outcome === 'already-decided')
      return json(409, { outcome: 'refused', message: 'this approval was already decided' });
    return json(404, { outcome: 'expired', message: 'this approval is unknown or has expired' });
  }

  /** Revokes the grant the approved call of `id` created (the id on its record), and reports it. */
  async #revoke(id: string): Promise<Answer> {
    const nowMs = this.#now();
    const record = await this.#store.approvalById(id, nowMs);
    if (record === undefined)
      return json(404, { outcome: 'expired', message: 'this approval is unknown or has expired; nothing was revoked' });
    if (record.status !== 'approved' || record.grantId === undefined)
      return json(409, { outcome: 'refused', message: 'this approval created no grant; nothing was revoked' });
    const grant = record.grantId;
    if ((await this.#store.revokeGrant(grant, nowMs)) !== 'revoked')
      return json(409, {
        outcome: 'ended',
        message: 'this grant had already ended (used up, expired or revoked); later calls are asked',
      });
    this.#emit({ type: 'grant-revoked', grant });
    const view = JSON.parse(record.view) as ApprovalView;
    await this.#revoked({
      grant,
      jti: record.jti,
      principal: record.principal,
      audience: view.audience,
      tool: view.tool,
      approver: null,
    });
    return json(200, {
      outcome: 'revoked',
      message: `grant ${grant} revoked: later calls like this one are asked again`,
    });
  }

  async #assertion(id: string, request: Record<string, unknown>): Promise<Answer> {
    // The button's choice travels beside the assertion; only it sets the scope, and only a grant offered on this page can be chosen.
    const { scope: chosen, ...body } = request;
    // 1. The challenge the browser signed, read from clientDataJSON, must be one we issued for THIS id; taken once.
    const challenge = claimedChallenge(body);
    if (challenge === undefined || !CHALLENGE_RE.test(challenge))
      return this.#refuse(400, 'no valid WebAuthn assertion');
    const challengeFor = await this.#store.takeChallenge(challenge, this.#now());
    if (challengeFor !== id)
      return this.#refuse(403, 'the assertion was not made for this approval (unknown, used or expired challenge)');
    const record = await this.#pending(id);
    if (!isRecord(record)) return record;
    // 2. The credential must belong to an approver allowed for the principal who asked.
    const approver = approversFor(this.#approvers, record.principal).find((a) => a.credentialId === body.id);
    if (approver === undefined) return this.#refuse(403, 'this passkey is not an approver for this principal');
    // 3. Signature, exact origin (scheme, host, port), RP ID, challenge, user verification.
    let newCounter: number | undefined;
    try {
      newCounter = await verifyAssertion(body, { origin: this.#origin, rpId: this.#rpId, challenge }, approver);
    } catch (e) {
      return this.#refuse(403, `the passkey assertion did not verify (${libraryReason(e)})`);
    }
    if (newCounter === undefined) return this.#refuse(403, 'the passkey assertion did not verify');
    // 4. The signature counter moves forward atomically (a replayed or cloned authenticator's does not).
    if (!(await this.#store.advanceCounter(approver.credentialId, newCounter, approver.counter))) {
      return this.#refuse(
        403,
        'the signature counter did not move forward (a replayed assertion or a cloned authenticator)',
      );
    }
    // 5. Only then: approved, once, with who approved and what (this call, or also the offered grant).
    const offered = typeof (JSON.parse(record.view) as ApprovalView).grant === 'string';
    const scope: ApprovalScope = chosen === 'grant' && offered ? 'grant' : 'call';
    // With a quorum this approver is counted (once), and only the last of N distinct ones approves.
    const required = record.approvalsRequired ?? 1;
    if (required > 1)
      return this.#counted(id, { approver: approver.name, credentialId: approver.credentialId, scope }, required);
    const outcome = await this.#decide(id, {
      status: 'approved',
      approver: approver.name,
      credentialId: approver.credentialId,
      scope,
    });
    if (outcome !== 'decided') return this.#refuse(409, 'this approval was already decided or has expired');
    this.#emit({ type: 'approval-approved', approver: approver.name, scope });
    return json(200, {
      outcome: 'approved',
      message:
        scope === 'grant'
          ? `approved by ${approver.name}, with similar calls; the tool call runs once when the client retries it, and the grant is created then (reload this page to see it and revoke it)`
          : `approved by ${approver.name}; the tool call runs once when the client retries it`,
    });
  }

  /** Counts one verified approver's approval of a quorum of `required`, and answers what it did. */
  async #counted(id: string, vote: ApprovalVote, required: number): Promise<Answer> {
    const outcome = await this.#count(id, vote);
    if (outcome === 'already-counted')
      return this.#refuse(
        409,
        `${vote.approver} has already approved this call: another approver must approve it with their own passkey`,
      );
    if (outcome !== 'approved' && outcome !== 'counted')
      return this.#refuse(409, 'this approval was already decided or has expired');
    const now = await this.#store.approvalById(id, this.#now());
    const approvals = now?.approvals ?? [];
    const names = approvals.map((a) => a.approver).join(', ');
    if (outcome === 'counted') {
      this.#emit({ type: 'approval-counted', approver: vote.approver, approvals: approvals.length, required });
      return json(200, {
        outcome: 'counted',
        message: `${approvals.length} of ${required} approvals (by ${names}): the call waits for ${required - approvals.length} more approver${required - approvals.length === 1 ? '' : 's'}, each with their own passkey`,
      });
    }
    const scope = now?.scope ?? 'call';
    this.#emit({ type: 'approval-approved', approver: names, scope });
    return json(200, {
      outcome: 'approved',
      message: `${required} of ${required} approvals: approved by ${names}; the tool call runs once when the client retries it${scope === 'grant' ? ', and the grant is created then (reload this page to see it and revoke it)' : ''}`,
    });
  }
}

/**
 * The line of a quorum's page: `K of N approvals`, and who approved so far (escaped). Empty
 * without a quorum.
 */
function quorumHtml(record: ApprovalRecord): string {
  const required = record.approvalsRequired ?? 1;
  if (required <= 1) return '';
  const names = (record.approvals ?? []).map((a) => escapeHtml(a.approver));
  const so = names.length === 0 ? 'none yet' : `by ${names.join(', ')}`;
  const need =
    record.status === 'pending'
      ? ` ${required} distinct approvers must approve, each with their own passkey; one Deny ends it.`
      : '';
  return `
<p class="quorum" id="quorum"><strong id="quorum-count">${names.length} of ${required} approvals</strong> (${so}).${need}</p>`;
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

/**
 * The question as the page shows it when the grant offer is shown on its own: without the offer's
 * line the guard appended (`question + "\n\n" + offer`). Only the display changes: the stored
 * question, its digest and what the client was asked keep the offer. Unchanged without an offer,
 * or when the question does not end with it.
 */
function withoutOffer(question: string, offered: string | undefined): string {
  if (offered === undefined) return question;
  const tail = `\n\n${offered}`;
  return question.endsWith(tail) ? question.slice(0, -tail.length) : question;
}

/**
 * What the page of a decided approval shows about a grant: with a grant attached, its line, its id
 * and a Revoke button; approved with "similar calls" before the grant exists, that it is created
 * when the client retries; otherwise nothing.
 */
function grantHtml(record: ApprovalRecord, offered: string | undefined): string {
  if (record.status !== 'approved' || offered === undefined) return '';
  if (record.grantId === undefined)
    return record.scope === 'grant'
      ? `\n<p class="note" id="grant-pending">Similar calls are allowed once the client retries this call: ${questionHtml(offered)}</p>`
      : '';
  return `
<section class="granted" id="granted">
<h2>Similar calls allowed</h2>
<p class="grant" id="grant">${questionHtml(offered)}</p>
<p class="note">Grant <code id="grant-id">${escapeHtml(record.grantId)}</code>. Revoking it ends it at once: every later call is asked again.</p>
<div class="actions"><button id="revoke" type="button">Revoke</button></div>
<p id="revoke-outcome" class="outcome" role="status"></p>
</section>`;
}

/**
 * Options that render a value whole (the page shows every value uncut; the question may cut).
 * The tool name is rendered too: a proxied upstream's tool name is untrusted text.
 */
const UNCUT = { maxGraphemes: Number.MAX_SAFE_INTEGER };

/**
 * The principal as the page shows it: `local`, or for a verified token (`["jwt", iss, sub]`, see
 * `jwtPrincipalFor`) the subject and its issuer. Escaped; never markup.
 */
function principalHtml(principal: string): string {
  const jwt = jwtPrincipalParts(principal);
  if (jwt === undefined) return escapeHtml(principal);
  return `${questionHtml(renderValue(jwt.sub, UNCUT))} (issuer ${questionHtml(renderValue(jwt.iss, UNCUT))})`;
}

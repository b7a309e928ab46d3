/**
 * The passkey round: with passkey approval ({@link PasskeyApproval}), the human decides on the
 * approval page, and the client's answer only says that they went there.
 *
 * Round 1 ({@link PasskeyRound.open}), after the `jti` was issued: opens an approval (a random id
 * bound to the `jti` in the store) and asks with a URL-mode elicitation to its page, or, to a
 * client without URL mode, a form elicitation carrying the URL. Round 2
 * ({@link PasskeyRound.settle}), after the digests matched: an answer that is not an accept spends
 * the `jti` and marks the approval declined; otherwise it waits for the page's decision: still
 * pending → asked again with the same URL and state, nothing spent; decided → spent, then declined
 * (nothing done) or approved (redeemable for {@link REDEEM_WITHIN_MS} after it was given). With a
 * grant offered, the page's record also says what was approved (`scope`: this call, or also the
 * grant), which the flow's `spendApproved` reads; the client's answer never sets it.
 *
 * It decides; the flow (`confirmation.ts`) reports, writes the audit lines and acts. Imports only
 * the types of the approval page, so a form-mode server never loads the WebAuthn library.
 *
 * @module
 */
import { inputRequired, type InputRequest, type McpServer, type ServerContext } from '@modelcontextprotocol/server';
// Types only: the WebAuthn library is loaded only by those who start a PasskeyApproval.
import type { ApprovalView, PasskeyApproval } from '../approval/passkey.js';
import { ConfirmApprovalExpiredError } from '../errors.js';
import { renderValue } from '../prompt/render.js';
import type { ConfirmClaims } from '../state/sealer.js';
import { REDEEM_WITHIN_MS, type ApprovalRecord } from '../store/approvalStore.js';
import { CONFIRM_SCHEMA, notConfirmed, type Answer, type NotConfirmed } from './answer.js';
import { clientCapabilities } from './capabilities.js';
import { failClosed, type StoreCalls } from './storeCalls.js';

/** The sentence after the question in a URL-mode elicitation (passkey approval). */
export const URL_MODE_SENTENCE = 'Open the link to approve or deny this on the approval page with your passkey.';
/** The sentence after the approval URL in a form elicitation to a client without URL mode (passkey approval). */
export const FORM_FALLBACK_SENTENCE = 'Approve on that page with your passkey, then confirm here.';

/** How round 2 with passkey approval settled ({@link PasskeyRound.settle}). */
export type Settled =
  /** No decision yet: ask again with this elicitation and the same state; nothing was spent. */
  | { kind: 'pending'; request: InputRequest }
  /** The `jti` is spent and nothing is to be done: the client's answer, or (`on: 'page'`) the page's decline. */
  | { kind: 'not-confirmed'; answer: NotConfirmed; on?: 'page' }
  /**
   * The `jti` is spent and an enrolled approver approved on the page, in time: act. `spent`: what
   * the caller's `spendApproved` resolved to (`undefined` without one).
   */
  | {
      kind: 'approved';
      approver: string;
      spent?: unknown;
      /** With a quorum (N > 1 approvers): every approver's name, in the order they approved. Absent otherwise. */
      approvers?: string[];
    };

/** One tool's passkey round, made by {@link passkeyRound}. */
export interface PasskeyRound<A, F> {
  /**
   * Round 1, after the `jti` was issued and the "asked" line written: opens the approval and
   * returns the elicitation that sends the human to its page. When the approval cannot be opened,
   * the `jti` is spent to free its slot, and the call is refused.
   *
   * @param call.question - the question as asked (the page shows it too).
   * @param call.grant - the line of the grant offered with the question (already in `question`), when
   *   one is: the page then offers "Approve and allow similar calls" beside "Approve this call".
   * @param call.principal - who is asking (the principal string, not its sealed tag).
   * @param nowMs - the caller's clock, Unix milliseconds.
   * @throws {ConfirmError} the store's refusal, else `ERR_CONFIRM_LEDGER_UNAVAILABLE`.
   */
  open(
    call: {
      args: A;
      fingerprint: F;
      question: string;
      grant?: string;
      claims: ConfirmClaims;
      principal: string;
      ctx: ServerContext;
    },
    nowMs: number,
  ): Promise<InputRequest>;
  /**
   * Round 2 with an answer, after the digests matched: settles the call by the page's record.
   *
   * @param call.state - the sealed `requestState` as received (`''`: never asked again with it).
   * @param call.question - the question rendered now (it matched the sealed digest).
   * @param call.spendApproved - how to spend the `jti` of an approval given in time (e.g. creating a
   *   grant, when the page's record has `scope: 'grant'`, or a plan in the same atomic step); it
   *   throws a spend's refusal as `StoreCalls.spend` does.
   *   Defaults to `StoreCalls.spend`. Every other outcome spends with `StoreCalls.spend`.
   * @throws {ConfirmError} `ERR_CONFIRM_APPROVAL_EXPIRED` (no decision in time, or an approval past
   *   its redemption window), a spend's refusal (`ERR_CONFIRM_SPENT`, …), or `ERR_CONFIRM_LEDGER_UNAVAILABLE`.
   */
  settle(call: {
    claims: ConfirmClaims;
    state: string;
    question: string;
    answer: Exclude<Answer, { kind: 'missing' }>;
    ctx: ServerContext;
    spendApproved?: (nowMs: number, record: ApprovalRecord) => Promise<unknown>;
  }): Promise<Settled>;
  /**
   * What the page shows for one call (every value uncut), as {@link open} opens it; for an
   * approval opened another way (by link, `linkRound.ts`).
   *
   * @param grant - the line of the grant offered with the question, when one is.
   */
  view(args: A, fingerprint: F, question: string, principal: string, grant?: string): ApprovalView;
}

/**
 * The passkey round of one tool.
 *
 * @param options.approval - the approval page (and, through `approval.store`, its records).
 * @param options.server - the server the tool is on (its client's capabilities pick the elicitation).
 * @param options.tool - the tool name the page shows.
 * @param options.audience - this server's name the page shows.
 * @param options.store - the guard's store calls (spending the `jti`).
 * @param options.now - the clock, Unix milliseconds.
 * @param options.nothingDone - the tail of the sentence when nothing is done.
 * @param options.pageValues - the raw values the page shows uncut below the question, each with a
 *   label. When absent or when it returns `undefined`: every top-level string argument, labelled by its name.
 * @param options.plan - `true` for `confirm_plan`: the page is titled as a plan's (`ApprovalView.plan`).
 */
export function passkeyRound<A, F>(options: {
  approval: PasskeyApproval;
  server: McpServer;
  tool: string;
  audience: string;
  store: StoreCalls;
  now: () => number;
  nothingDone: string;
  pageValues?: (args: A, fingerprint: F) => Array<{ label: string; value: string }> | undefined;
  plan?: boolean;
}): PasskeyRound<A, F> {
  const { approval, server, store, now } = options;

  /** The elicitation that sends the human to the approval page: URL mode when the client has it, else a form carrying the URL. */
  const approvalRequest = (question: string, url: string, id: string, ctx: ServerContext): InputRequest => {
    const can = clientCapabilities(server, ctx);
    if (can.url) {
      const request = inputRequired.elicitUrl({ message: `${question}\n\n${URL_MODE_SENTENCE}`, url });
      // 2025-era connections: our approval id as the elicitationId, so notifications/elicitation/complete can name it.
      if (can.era === 'legacy') (request as { params: Record<string, unknown> }).params.elicitationId = id;
      return request;
    }
    return inputRequired.elicit({
      message: `${question}\n\nApproval page: ${renderValue(url)}\n${FORM_FALLBACK_SENTENCE}`,
      requestedSchema: CONFIRM_SCHEMA,
    });
  };

  /** The page's view of one call: every value uncut. */
  const pageView = (args: A, fingerprint: F, question: string, principal: string, grant?: string): ApprovalView => {
    const raw =
      options.pageValues?.(args, fingerprint) ??
      Object.entries(args as Record<string, unknown>)
        .filter((e): e is [string, string] => typeof e[1] === 'string')
        .map(([label, value]) => ({ label, value }));
    return {
      audience: options.audience,
      principal,
      tool: options.tool,
      question,
      values: raw.map((v) => ({
        label: v.label,
        text: renderValue(v.value, { maxGraphemes: Number.MAX_SAFE_INTEGER, segments: '/' }),
      })),
      ...(grant === undefined ? {} : { grant }),
      ...(options.plan === true ? { plan: true } : {}),
    };
  };

  /** Tells a 2025-era URL-mode client that the page was decided (spec 2025-11-25, notifications/elicitation/complete). */
  const notifyOnDecision = (id: string, ctx: ServerContext, expiresAtMs: number): void => {
    const can = clientCapabilities(server, ctx);
    if (can.era === 'modern' || !can.url) return;
    let notify: () => Promise<void>;
    try {
      notify = server.server.createElicitationCompletionNotifier(id);
    } catch {
      return;
    }
    approval.onDecided(id, () => void notify().catch(() => {}), Math.max(0, expiresAtMs - now()));
  };

  const open: PasskeyRound<A, F>['open'] = async (
    { args, fingerprint, question, grant, claims, principal, ctx },
    nowMs,
  ) => {
    let opened: { id: string; url: string };
    try {
      opened = await failClosed(() =>
        approval.open(
          {
            jti: claims.jti,
            principal,
            view: pageView(args, fingerprint, question, principal, grant),
            expiresAtMs: claims.exp * 1000,
          },
          nowMs,
        ),
      );
    } catch (e) {
      // Free the store slot of a question that can never be approved.
      await store.release(claims.jti, nowMs);
      throw e;
    }
    notifyOnDecision(opened.id, ctx, claims.exp * 1000);
    return approvalRequest(question, opened.url, opened.id, ctx);
  };

  const settle: PasskeyRound<A, F>['settle'] = async ({ claims, state, question, answer, ctx, spendApproved }) => {
    // The client's accept means only that the human opened the page (URL mode) or says they approved there (form fallback).
    if (answer.kind !== 'confirmed') {
      // Decline, cancel or anything else: spend, nothing done; the page shows it as denied.
      await store.spend(claims.jti, now());
      const record = await approval.store.approvalByJti(claims.jti, now()).catch(() => undefined);
      // Through the approval, which wakes its waiters and sends the outcome to its notification channels.
      if (record?.status === 'pending') await approval.decline(record.id).catch(() => {});
      return { kind: 'not-confirmed', answer };
    }
    // 1. Wait for the page's decision (up to the approval's wait); reading it changes nothing.
    const record = await failClosed(() => approval.waitForDecision(claims.jti, ctx.mcpReq.signal));
    // 2. Still pending: ask again with the same URL and the same state; nothing is spent.
    if (record?.status === 'pending' && state !== '')
      return { kind: 'pending', request: approvalRequest(question, approval.urlFor(record.id), record.id, ctx) };
    // 3. Decided (or gone): the jti is spent atomically now, whatever the decision. An approval is
    // redeemable for REDEEM_WITHIN_MS after it was given (and, by the state's TTL, never after expiry);
    // only such an approval is spent the caller's way (which may create a grant or plan with the spend).
    const nowMs = now();
    const redeemable =
      record?.status === 'approved' && nowMs < record.decidedAtMs + REDEEM_WITHIN_MS && nowMs < record.expiresAtMs;
    const spent =
      redeemable && spendApproved ? await spendApproved(nowMs, record) : await store.spend(claims.jti, nowMs);
    if (record === undefined || record.status === 'pending') throw new ConfirmApprovalExpiredError();
    if (record.status === 'declined')
      return { kind: 'not-confirmed', answer: notConfirmed('decline', options.nothingDone), on: 'page' };
    // 4. Approved, but too late to redeem: spent, nothing done.
    if (!redeemable) throw new ConfirmApprovalExpiredError();
    const quorum = (record.approvalsRequired ?? 1) > 1 ? record.approvals?.map((a) => a.approver) : undefined;
    return { kind: 'approved', approver: record.approver, spent, ...(quorum ? { approvers: quorum } : {}) };
  };

  return { open, settle, view: pageView };
}

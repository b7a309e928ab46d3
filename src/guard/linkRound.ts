/**
 * Approval by link: with passkey approval, a client that declares no elicitation (either protocol
 * era) is not refused but sent to the approval page by link, and the call is retried.
 *
 * A call's *link key* ({@link linkKeyOf}) is the digest of everything the retry must match
 * exactly: the audience, the principal's tag, the binding (over stdio the serving process, and
 * the tool's own), the tool, the arguments' digest and the question's digest. The store keeps at
 * most one live link per key (`linkStore.ts`), with the round-1 identity beside it (the sealed
 * round-1 state, which only this server's keys open). The same call later finds it
 * ({@link LinkRound.find}):
 * - none (or expired, or finished) → the flow seals and issues a round 1 as usual and opens a
 *   link ({@link LinkRound.open}): at most {@link MAX_PENDING_LINK_APPROVALS} pending per
 *   principal (`ERR_CONFIRM_TOO_MANY_PENDING`), answered with an `isError` result
 *   (`ERR_CONFIRM_APPROVAL_PENDING`: the URL, the tool, "Nothing was done") and the link in
 *   `_meta` under {@link APPROVAL_META_KEY};
 * - pending → waits up to the approval's wait, then the same text and link; nothing new;
 * - declined → the `jti` is spent and the link finished (the next call asks anew); nothing done;
 * - approved → the flow re-checks and spends it ({@link LinkRound.spend}: the `jti` spent once,
 *   atomically, then the link finished; concurrent retries: one spends, the others are refused),
 *   then acts on the kept identity.
 * A link is not an approval: only the page's passkey assertion approves.
 *
 * It decides and answers; the flow (`confirmation.ts`) seals, writes the audit lines and acts.
 *
 * @module
 */
import type { CallToolResult, ServerContext } from '@modelcontextprotocol/server';
// Types only: the WebAuthn library is loaded only by those who start a PasskeyApproval.
import type { ApprovalView, PasskeyApproval } from '../approval/passkey.js';
import { MAX_PENDING_LINK_APPROVALS } from '../defaults.js';
import { ConfirmApprovalPendingError, ConfirmError, ConfirmTooManyPendingError, toToolError } from '../errors.js';
import { renderValue } from '../prompt/render.js';
import { canonicalDigest } from '../state/digest.js';
import type { ApprovalRecord } from '../store/approvalStore.js';
import type { LinkedApproval } from '../store/linkStore.js';
import { notConfirmed, type NotConfirmed } from './answer.js';
import { failClosed, type StoreCalls } from './storeCalls.js';

/**
 * The key of a link approval in a tool result's `_meta`: `"mcp-confirm/approval"`. Its value is
 * `{ id, url, status: 'pending', expiresAt }` (the approval id, the page's URL, and the expiry as
 * ISO 8601 text).
 */
export const APPROVAL_META_KEY = 'mcp-confirm/approval';

/** What a link approval's `_meta` entry ({@link APPROVAL_META_KEY}) holds. */
export interface ApprovalLinkMeta {
  /** The approval id (the URL's last segment). */
  id: string;
  /** The approval page's URL. */
  url: string;
  status: 'pending';
  /** When the approval expires, ISO 8601 (UTC). */
  expiresAt: string;
}

/**
 * The link key of a call: SHA-256 of the RFC 8785 form of what the retry must match exactly.
 *
 * @param call.audience - this server's name.
 * @param call.principal - the principal's salted tag (never the principal).
 * @param call.binding - over stdio the serving process, and the tool's own binding.
 * @param call.tool - the tool name.
 * @param call.args - the arguments' digest.
 * @param call.question - the question's sealed digest.
 * @returns the key (base64url text).
 */
export function linkKeyOf(call: {
  audience: string;
  principal: string;
  binding: string;
  tool: string;
  args: string;
  question: string;
}): string {
  return canonicalDigest(call, 'link approval');
}

/** What {@link LinkRound.find} found for a call. */
export type LinkFound =
  /** No live link: ask anew (a new round 1 and link). */
  | { kind: 'none' }
  /** Still pending after the wait: answer this (the same link); nothing new. */
  | { kind: 'pending'; result: CallToolResult }
  /** Declined on the page: its `jti` is spent and the link finished; nothing is to be done. */
  | { kind: 'declined'; jti: string; answer: NotConfirmed }
  /** Approved on the page and unexpired: re-check, then {@link LinkRound.spend} it. */
  | { kind: 'approved'; linked: LinkedApproval };

/** One tool's link round, made by {@link linkRound}. */
export interface LinkRound {
  /**
   * Finds the live link of a call; when pending, waits up to the approval's wait for the page.
   *
   * @param key - the call's {@link linkKeyOf}.
   * @param ctx - the request's context (its abort signal ends the wait).
   * @throws {ConfirmError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` when the store fails.
   */
  find(key: string, ctx: ServerContext): Promise<LinkFound>;
  /**
   * Opens a link for a round 1 whose `jti` was issued: the answer to give (pending, with the link),
   * or `'exists'` when a concurrent call opened the key's link first (the `jti` is released; find
   * it again). When the principal has too many pending, the `jti` is released and the call refused.
   *
   * @param call.kept - the sealed round-1 state (kept server-side, never sent).
   * @param call.view - what the page shows.
   * @param call.principal - the principal string (approvers are allowed per principal).
   * @param call.jti - the issued `jti`; `call.expiresAtMs` its expiry, Unix milliseconds.
   * @throws {ConfirmTooManyPendingError} `ERR_CONFIRM_TOO_MANY_PENDING`.
   * @throws {ConfirmError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` when the store fails.
   */
  open(
    call: { key: string; kept: string; view: ApprovalView; principal: string; jti: string; expiresAtMs: number },
    nowMs: number,
  ): Promise<CallToolResult | 'exists'>;
  /**
   * Spends an approved link's `jti` (once, atomically: `spendApproved` when given, e.g. creating a
   * grant or plan with it, else `StoreCalls.spend`), then finishes the link. A spend's refusal
   * (a concurrent retry spent it first) finishes the link too, then is thrown.
   *
   * @returns what `spendApproved` resolved to (`undefined` without one).
   * @throws {ConfirmError} `ERR_CONFIRM_SPENT` and the other spend refusals, `ERR_CONFIRM_LEDGER_UNAVAILABLE`.
   */
  spend(
    key: string,
    linked: LinkedApproval,
    spendApproved?: (nowMs: number, record: ApprovalRecord) => Promise<unknown>,
  ): Promise<unknown>;
  /** Spends a link's `jti` and finishes the link, whatever the outcome (nothing is done with it). */
  finish(key: string, linked: LinkedApproval): Promise<void>;
}

/**
 * The link round of one tool.
 *
 * @param options.approval - the approval page (and, through `approval.store`, its records).
 * @param options.tool - the tool name the text names.
 * @param options.store - the guard's store calls (issuing is the flow's; spending and releasing here).
 * @param options.now - the clock, Unix milliseconds.
 * @param options.nothingDone - the tail of the sentence when nothing is done.
 */
export function linkRound(options: {
  approval: PasskeyApproval;
  tool: string;
  store: StoreCalls;
  now: () => number;
  nothingDone: string;
}): LinkRound {
  const { approval, store, now } = options;
  const toolShown = renderValue(options.tool);

  /** The pending answer: the text with the URL and the tool, and the link in `_meta`. */
  const pendingResult = (id: string, expiresAtMs: number): CallToolResult => {
    const url = approval.urlFor(id);
    const meta: ApprovalLinkMeta = { id, url, status: 'pending', expiresAt: new Date(expiresAtMs).toISOString() };
    return { ...toToolError(new ConfirmApprovalPendingError(url, toolShown)), _meta: { [APPROVAL_META_KEY]: meta } };
  };

  const finish: LinkRound['finish'] = async (key, linked) => {
    await store.release(linked.approval.jti, now());
    await failClosed(() => approval.store.finishLink(key, linked.approval.id, now()));
  };

  const find: LinkRound['find'] = async (key, ctx) => {
    const linked = await failClosed(() => approval.store.approvalByLink(key, now()));
    if (linked === undefined) return { kind: 'none' };
    let record: ApprovalRecord | undefined = linked.approval;
    if (record.status === 'pending') {
      // The same wait as a passkey round 2: woken by a decision, bounded by the approval's wait.
      record = await failClosed(() => approval.waitForDecision(linked.approval.jti, ctx.mcpReq.signal));
      if (record === undefined) return { kind: 'none' };
      if (record.status === 'pending') return { kind: 'pending', result: pendingResult(record.id, record.expiresAtMs) };
    }
    const decided = { approval: record, kept: linked.kept };
    if (record.status === 'declined') {
      await finish(key, decided);
      return { kind: 'declined', jti: record.jti, answer: notConfirmed('decline', options.nothingDone) };
    }
    return { kind: 'approved', linked: decided };
  };

  const open: LinkRound['open'] = async ({ key, kept, view, principal, jti, expiresAtMs }, nowMs) => {
    let opened: Awaited<ReturnType<PasskeyApproval['openLink']>>;
    try {
      opened = await failClosed(() =>
        approval.openLink({ jti, principal, view, expiresAtMs, linkKey: key, kept }, MAX_PENDING_LINK_APPROVALS, nowMs),
      );
    } catch (e) {
      // Free the store slot of a question that can never be approved.
      await store.release(jti, nowMs);
      throw e;
    }
    if (opened.outcome === 'opened') return pendingResult(opened.id, expiresAtMs);
    await store.release(jti, nowMs);
    if (opened.outcome === 'too-many') throw new ConfirmTooManyPendingError();
    return 'exists';
  };

  const spend: LinkRound['spend'] = async (key, linked, spendApproved) => {
    const nowMs = now();
    let spent: unknown;
    try {
      spent = spendApproved
        ? await spendApproved(nowMs, linked.approval)
        : await store.spend(linked.approval.jti, nowMs);
    } catch (e) {
      // Spent by a concurrent retry (or gone): this link never approves again.
      if (e instanceof ConfirmError)
        await failClosed(() => approval.store.finishLink(key, linked.approval.id, now())).catch(() => {});
      throw e;
    }
    // Spent: the link is finished, so the next call asks anew (a failure here leaves only a spent jti behind it).
    await failClosed(() => approval.store.finishLink(key, linked.approval.id, now())).catch(() => {});
    return spent;
  };

  return { find, open, spend, finish };
}

/**
 * What a notification carries: {@link ApprovalNotice}, one approval's request or outcome, and
 * the few shared helpers the channel formats use to show it (the expiry as an ISO 8601 time, a
 * caller's question made safe to show as plain text, a text cut to a channel's limit).
 *
 * A notice never carries a `requestState`, a token, an argument's value or a secret: only the
 * approval's id and page URL, the tool's name, the audience, the expiry, the principal's salted
 * tag (as the audit trail writes it), the outcome, the approvers' enrolled names and, for a quorum,
 * how many approved of how many needed, and the question only when the caller includes it (a
 * channel is often a third party).
 *
 * @module
 */
import { codePointEscape } from '../prompt/render.js';

/**
 * The kinds of event a channel receives: an approval asked for, one approval of a quorum counted
 * that does not complete it, and the outcome.
 */
export type ApprovalNoticeType = 'approval.requested' | 'approval.counted' | 'approval.decided';

/** Every {@link ApprovalNoticeType}, in the order an approval's events happen. */
export const APPROVAL_NOTICE_TYPES: readonly ApprovalNoticeType[] = [
  'approval.requested',
  'approval.counted',
  'approval.decided',
];

/** How an approval ended, in an `approval.decided` notice. */
export type ApprovalDecision = 'approved' | 'declined' | 'expired';

/**
 * One approval's request (`approval.requested`, sent as it is created), a step of its quorum
 * (`approval.counted`: an approver's approval counted, more still needed) or its outcome
 * (`approval.decided`), as every channel receives it.
 *
 * Never a state, token, argument value or secret. `tool` and `question` are untrusted text (a
 * tool's name comes from the server or the proxy's upstream); the human channels (Slack, ntfy)
 * show `tool` through `renderValue`, and `question` only as the guard rendered it (any control or
 * bidi control left in it shown as a visible escape, `⟨U+202E⟩`).
 */
export interface ApprovalNotice {
  /** `approval.requested`, `approval.counted` or `approval.decided`. */
  type: ApprovalNoticeType;
  /** The approval's id (the last segment of its page's URL). */
  approvalId: string;
  /** The approval page's URL, `http(s)://…/approve/ID`: the link the human opens. */
  url: string;
  /** The tool's name, as the call names it (untrusted). */
  tool: string;
  /** The audience the confirmation is sealed for (the server's name). */
  audience: string;
  /** When the approval stops being answerable, in milliseconds since the Unix epoch. */
  expiresAtMs: number;
  /** The principal's salted tag, exactly as the audit trail writes it (never the principal itself). */
  principalTag: string;
  /**
   * The question as the guard rendered it (its values already through `renderValue`), only when
   * the caller chose to include it (the command line: `--notify-include-question`).
   */
  question?: string;
  /** How it ended (`approval.decided` only). */
  decision?: ApprovalDecision;
  /**
   * Who approved, by their enrolled names, in the order they approved: those counted so far
   * (`approval.counted`), or all of them (`approval.decided`, when approved). Never a credential.
   */
  approvers?: string[];
  /** With a quorum: how many distinct approvers have approved so far (`approval.counted`). */
  approvals?: number;
  /** With a quorum: how many distinct approvers must approve (`approval.counted`). */
  approvalsRequired?: number;
}

/** An epoch time in milliseconds as ISO 8601 UTC (`2026-12-03T22:49:43.000Z`), or `unknown` when not a valid time. */
export function isoTime(ms: number): string {
  const date = new Date(ms);
  return Number.isFinite(date.getTime()) ? date.toISOString() : 'unknown';
}

/**
 * Bidi controls (Unicode TR #9: U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069) and every
 * control character but the line feed.
 */
const UNSAFE_IN_PLAIN_TEXT = /[\u0000-\u0009\u000B-\u001F\u007F-\u009F\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/gu;

/**
 * A caller's question as a channel shows it: the guard's rendering (its values already through
 * `renderValue`, so visible and markup-proof as plain text) kept as it is, line feeds included,
 * with any control or bidi control left in it (a caller that did not render) shown as a visible
 * escape (`⟨U+202E⟩`, `⟨U+001B⟩`: `codePointEscape`), so the text reads the same in every client.
 */
export function shownQuestion(question: string): string {
  return question.replace(UNSAFE_IN_PLAIN_TEXT, (c) => codePointEscape(c.codePointAt(0)!));
}

/**
 * `text` cut to at most `max` UTF-16 code units: its end replaced by `…` when longer, never
 * splitting a surrogate pair.
 */
export function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max - 1;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}…`;
}

/**
 * `text` cut (as {@link clip} does) to at most `maxBytes` bytes of UTF-8, for a channel whose
 * limit is in bytes.
 */
export function clipBytes(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  let lo = 1;
  let hi = Math.min(text.length, maxBytes);
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (Buffer.byteLength(clip(text, mid)) <= maxBytes) lo = mid;
    else hi = mid - 1;
  }
  return clip(text, lo);
}

/**
 * What each channel kind sends for one {@link ApprovalNotice}: the body and headers of its HTTP
 * `POST` (pure, no I/O; the time and the event id are given).
 *
 * - `standard`: a JSON event `{ type, timestamp, data }` (Standard Webhooks: `timestamp` the
 *   event's time in ISO 8601, `data` the notice's fields with the expiry as `expiresAt`), signed
 *   per Standard Webhooks v1 by {@link standardSignature}: `webhook-id`, `webhook-timestamp` (Unix
 *   seconds of the attempt), `webhook-signature` `v1,` + base64 HMAC-SHA256 over
 *   `ID.TIMESTAMP.BODY` (`node:crypto`). The body is the same on every attempt of one event; the
 *   timestamp and signature are those of the attempt.
 * - `slack`: an incoming-webhook message `{ text, blocks }`: `text` the one-line summary (Slack's
 *   fallback for notifications), `blocks` a `section` (`mrkdwn`) with the summary, the expiry and
 *   (when included) the question, then an `actions` block with one `button` whose `url` is the
 *   approval page. Every text has `&`, `<` and `>` escaped as Slack's formatting requires (so a
 *   value cannot open a link or a mention).
 * - `ntfy`: a publish: body the question (when included) or a neutral sentence, headers `Title`
 *   (ASCII: a header is bytes), `Click` (the page), `Priority` (`high` for a request, `default`
 *   for a quorum's step and an outcome) and `Tags` (emoji short codes); plain text, no `Markdown` header.
 *
 * An `approval.counted` notice (one approval of a quorum, more still needed) reads `1 of 2
 * approvals` in the human channels, with the link: the approval is still open.
 *
 * The tool's name and the audience are shown to a human (Slack, ntfy) through `renderValue`; the
 * question as the guard rendered it ({@link shownQuestion}).
 *
 * @module
 */
import { createHmac } from 'node:crypto';
import { renderValue } from '../prompt/render.js';
import { clip, clipBytes, isoTime, shownQuestion, type ApprovalNotice } from './notice.js';

/** One HTTP request of a channel: its body and headers (the method is `POST`, the URL the channel's). */
export interface NotifyRequest {
  headers: Record<string, string>;
  body: string;
}

/** The most UTF-16 code units of the question a Slack section shows: 2,000 (Slack caps a section's text at 3,000 characters). */
export const MAX_SHOWN_QUESTION = 2_000;

/** The most bytes (UTF-8) of an ntfy body: 4,000 (ntfy takes a longer message as an attachment, past 4,096 bytes by default). */
export const MAX_NTFY_BODY_BYTES = 4_000;

/** The widest a tool name or audience is shown to a human, in graphemes (`renderValue`'s `maxGraphemes`): 80. */
const SHOWN_NAME_GRAPHEMES = 80;

/**
 * The Standard Webhooks v1 signature of one attempt: `v1,` + base64 HMAC-SHA256 with `key` over
 * `${id}.${timestampSeconds}.${body}`.
 *
 * @param key - the secret's decoded bytes (the base64 after `whsec_`).
 * @param timestampSeconds - the attempt's `webhook-timestamp`, Unix seconds.
 */
export function standardSignature(key: Uint8Array, id: string, timestampSeconds: number, body: string): string {
  return `v1,${createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`;
}

/**
 * The JSON body of a `standard` event: `{ type, timestamp, data }`, `data` holding `approvalId`,
 * `url`, `tool`, `audience`, `expiresAt` (ISO 8601), `principalTag`, and when present
 * `question`, `decision`, `approvers`, `approvals`, `approvalsRequired`. Values as they are (JSON carries any string; the receiver
 * renders them).
 *
 * @param eventMs - the event's time (when it was queued), in milliseconds since the epoch.
 */
export function standardBody(notice: ApprovalNotice, eventMs: number): string {
  const data: Record<string, unknown> = {
    approvalId: notice.approvalId,
    url: notice.url,
    tool: notice.tool,
    audience: notice.audience,
    expiresAt: isoTime(notice.expiresAtMs),
    principalTag: notice.principalTag,
  };
  if (notice.question !== undefined) data.question = notice.question;
  if (notice.decision !== undefined) data.decision = notice.decision;
  if (notice.approvers !== undefined) data.approvers = [...notice.approvers];
  if (notice.approvals !== undefined) data.approvals = notice.approvals;
  if (notice.approvalsRequired !== undefined) data.approvalsRequired = notice.approvalsRequired;
  return JSON.stringify({ type: notice.type, timestamp: isoTime(eventMs), data });
}

/**
 * The headers of one `standard` attempt (`content-type`, `webhook-id`, `webhook-timestamp`,
 * `webhook-signature`).
 *
 * @param attemptMs - the attempt's time, in milliseconds since the epoch (its Unix seconds sign).
 */
export function standardRequest(key: Uint8Array, id: string, body: string, attemptMs: number): NotifyRequest {
  const seconds = Math.floor(attemptMs / 1000);
  return {
    headers: {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(seconds),
      'webhook-signature': standardSignature(key, id, seconds, body),
    },
    body,
  };
}

/** A tool name or audience as a human reads it: `renderValue`, at most {@link SHOWN_NAME_GRAPHEMES} wide. */
function shownName(value: string): string {
  return renderValue(value, { maxGraphemes: SHOWN_NAME_GRAPHEMES });
}

/** A quorum's step as the human channels title it: `1 of 2 approvals`. */
export function countedTitle(notice: ApprovalNotice): string {
  return `${notice.approvals ?? '?'} of ${notice.approvalsRequired ?? '?'} approvals`;
}

/** Whether the approval a notice is about is still open (asked for, or a quorum's step): its link still approves. */
function stillOpen(notice: ApprovalNotice): boolean {
  return notice.type === 'approval.requested' || notice.type === 'approval.counted';
}

/** The one-line summary both human channels show (renderings of the untrusted names inside). */
export function summary(notice: ApprovalNotice): string {
  const call = `${shownName(notice.tool)} on ${shownName(notice.audience)}`;
  if (notice.type === 'approval.requested') return `Approval requested: ${call}`;
  if (notice.type === 'approval.counted') {
    const so = notice.approvers !== undefined && notice.approvers.length > 0;
    return `${countedTitle(notice)}: ${call}${so ? ` (by ${notice.approvers!.map(shownName).join(', ')})` : ''}`;
  }
  const outcome = notice.decision ?? 'decided';
  const by =
    outcome === 'approved' && notice.approvers !== undefined && notice.approvers.length > 0
      ? ` by ${notice.approvers.map(shownName).join(', ')}`
      : '';
  return `Approval ${outcome}: ${call}${by}`;
}

/** `text` with `&`, `<` and `>` escaped as Slack's message formatting requires. */
export function slackEscape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** The Slack incoming-webhook message of a notice: `{ text, blocks: [section, actions] }`. */
export function slackRequest(notice: ApprovalNotice): NotifyRequest {
  const line = summary(notice);
  const lines = [`*${slackEscape(line)}*`];
  if (stillOpen(notice)) lines.push(`Expires ${isoTime(notice.expiresAtMs)}`);
  if (notice.question !== undefined)
    lines.push('', slackEscape(clip(shownQuestion(notice.question), MAX_SHOWN_QUESTION)));
  const message = {
    text: slackEscape(line),
    blocks: [
      { type: 'section', text: { type: 'mrkdwn', text: lines.join('\n') } },
      {
        type: 'actions',
        elements: [
          {
            type: 'button',
            text: { type: 'plain_text', text: stillOpen(notice) ? 'Review and approve' : 'View' },
            url: notice.url,
          },
        ],
      },
    ],
  };
  return { headers: { 'content-type': 'application/json' }, body: JSON.stringify(message) };
}

/** The ntfy tags (emoji short codes) of a notice. */
const NTFY_TAGS: Record<string, string> = {
  requested: 'lock',
  counted: 'ballot_box_with_check',
  approved: 'white_check_mark',
  declined: 'x',
  expired: 'hourglass',
};

/** The ntfy publish of a notice: a plain-text body, `Title`, `Click`, `Priority`, `Tags`. */
export function ntfyRequest(notice: ApprovalNotice): NotifyRequest {
  const requested = notice.type === 'approval.requested';
  const counted = notice.type === 'approval.counted';
  const body =
    notice.question !== undefined
      ? clipBytes(shownQuestion(notice.question), MAX_NTFY_BODY_BYTES)
      : stillOpen(notice)
        ? `${summary(notice)}. Open the link to review it; it expires ${isoTime(notice.expiresAtMs)}.`
        : `${summary(notice)}.`;
  return {
    headers: {
      'content-type': 'text/plain; charset=utf-8',
      Title: requested
        ? 'Approval requested'
        : counted
          ? countedTitle(notice)
          : `Approval ${notice.decision ?? 'decided'}`,
      Click: notice.url,
      Priority: requested ? 'high' : 'default',
      Tags: NTFY_TAGS[requested ? 'requested' : counted ? 'counted' : (notice.decision ?? 'expired')] ?? 'bell',
    },
    body,
  };
}

/**
 * The question's form and the one reader of the client's answer to it.
 *
 * Every confirmation asks one elicitation under {@link CONFIRM_KEY} with the form
 * {@link CONFIRM_SCHEMA}; round 2 reads the answer with {@link readAnswer}, whichever way it was
 * asked (a form, or with passkey approval a URL to the approval page). The answer is client input
 * and unvalidated by the SDK: only an explicit `accept` with `confirmed === true` (a boolean)
 * confirms; decline, cancel and anything else confirm nothing, each with its sentence.
 *
 * @module
 */
import { inputResponse, type ServerContext } from '@modelcontextprotocol/server';

/** The key under which the confirmation is asked in `inputRequests` (and answered in `inputResponses`). */
export const CONFIRM_KEY = 'confirm';

/**
 * The form every confirmation asks: one required boolean `confirmed`
 * (a flat object of primitives, as form mode requires: spec 2026-07-28, client/elicitation).
 */
export const CONFIRM_SCHEMA: {
  type: 'object';
  properties: { confirmed: { type: 'boolean'; title: string; description: string } };
  required: string[];
} = {
  type: 'object',
  properties: {
    confirmed: {
      type: 'boolean',
      title: 'Confirm',
      description: 'Set to true to confirm exactly the action described above.',
    },
  },
  required: ['confirmed'],
};

/** The value of the form's optional `scope` field that accepts the offered grant. */
export const GRANT_SCOPE = 'grant';

/**
 * The form asked when a grant is offered ({@link ConfirmableToolConfig.grant}): {@link CONFIRM_SCHEMA}
 * and one optional field `scope`, a titled single-select enum (spec 2026-07-28, client/elicitation,
 * "Requested Schema": `oneOf` of `const`/`title`) of `call` ("this call", the default) and
 * {@link GRANT_SCOPE} ("grant"). A client that ignores the field approves this call only.
 */
export const GRANT_OFFER_SCHEMA: {
  type: 'object';
  properties: {
    confirmed: { type: 'boolean'; title: string; description: string };
    scope: {
      type: 'string';
      title: string;
      description: string;
      oneOf: Array<{ const: string; title: string }>;
      default: string;
    };
  };
  required: string[];
} = {
  type: 'object',
  properties: {
    confirmed: CONFIRM_SCHEMA.properties.confirmed,
    scope: {
      type: 'string',
      title: 'Scope',
      description: 'this call: only the action described above. grant: also the similar calls the question offers.',
      oneOf: [
        { const: 'call', title: 'this call' },
        { const: GRANT_SCOPE, title: 'grant' },
      ],
      default: 'call',
    },
  },
  required: ['confirmed'],
};

/** An answer that confirms nothing: nothing is done, and the result says why. */
export interface NotConfirmed {
  /** `'other'`: an accept without `confirmed === true`, or anything that is not an elicitation answer. */
  kind: 'declined' | 'cancelled' | 'other';
  /**
   * The client's action, as the `not-confirmed` event and the audit line's outcome name it: `'accept'`
   * (without `confirmed === true`), `'decline'`, `'cancel'`, or `'other'` (another kind of answer,
   * or an action outside these three).
   */
  action: 'accept' | 'decline' | 'cancel' | 'other';
  /** The text of the (non-error) result, e.g. `'You declined; nothing was deleted.'` */
  sentence: string;
}

/**
 * The client's answer, read: `missing` (no answer under {@link CONFIRM_KEY}, or one of no known
 * shape: the human is asked again), `confirmed`, or one that confirms nothing ({@link NotConfirmed}).
 */
export type Answer = { kind: 'missing' } | { kind: 'confirmed'; grant?: true } | NotConfirmed;

/**
 * The answer that confirms nothing for `action`, with its sentence.
 *
 * @param action - the client's action (see {@link NotConfirmed.action}).
 * @param nothingDone - the tail of the sentence, e.g. `'nothing was deleted'`.
 */
export function notConfirmed(action: NotConfirmed['action'], nothingDone: string): NotConfirmed {
  switch (action) {
    case 'decline':
      return { kind: 'declined', action, sentence: `You declined; ${nothingDone}.` };
    case 'cancel':
      return { kind: 'cancelled', action, sentence: `You cancelled; ${nothingDone}.` };
    case 'accept':
      return { kind: 'other', action, sentence: `You did not confirm; ${nothingDone}.` };
    default:
      return { kind: 'other', action: 'other', sentence: `No valid confirmation was given; ${nothingDone}.` };
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Reads the client's answer to the confirmation from a retried request's `inputResponses`.
 *
 * @param responses - `ctx.mcpReq.inputResponses` (client input, unvalidated).
 * @param options.nothingDone - the tail of the sentence when nothing is done, e.g. `'nothing was deleted'`.
 * @param options.acceptWithoutContent - whether an `accept` carrying no content confirms: with passkey
 *   approval, a URL-mode accept carries none (it says only that the human opened the page, whose
 *   record then decides). Defaults to `false`: the form's `confirmed: true` is required.
 * @returns the {@link Answer}; never throws. `grant: true` when the content also says `scope: "grant"`
 *   (the caller honours it only when it offered a grant in a form).
 */
export function readAnswer(
  responses: ServerContext['mcpReq']['inputResponses'],
  options: { nothingDone: string; acceptWithoutContent?: boolean },
): Answer {
  // Only an own entry counts: a "__proto__" key in the client's JSON can become an inherited one.
  const view =
    responses !== undefined && Object.hasOwn(responses, CONFIRM_KEY)
      ? inputResponse(responses, CONFIRM_KEY)
      : ({ kind: 'missing' } as const);
  if (view.kind === 'missing') return view;
  if (view.kind !== 'elicit') return notConfirmed('other', options.nothingDone);
  const content: unknown = view.content;
  const confirmed =
    view.action === 'accept' &&
    ((options.acceptWithoutContent === true && content === undefined) ||
      (isPlainObject(content) && Object.hasOwn(content, 'confirmed') && content.confirmed === true));
  // The offered grant only by an explicit `scope: "grant"` beside `confirmed: true`.
  if (confirmed)
    return isPlainObject(content) && Object.hasOwn(content, 'scope') && content.scope === GRANT_SCOPE
      ? { kind: 'confirmed', grant: true }
      : { kind: 'confirmed' };
  return notConfirmed(
    ['accept', 'decline', 'cancel'].includes(view.action) ? view.action : 'other',
    options.nothingDone,
  );
}

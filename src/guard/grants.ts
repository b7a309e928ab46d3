/**
 * The guard's side of grants and plans: what a grant offer is (its terms, its line in the
 * question, its digest), how a grant record is written from an approved offer, and the wording of
 * the results of calls made under a grant or a plan. The store keeps the counts and makes every
 * take atomic (`src/store/grantStore.ts`); the flow (`confirmation.ts`) decides when to take.
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { pinArguments, grantPolicyDigest, type GrantPolicy, type PinnedArguments } from '../grant/matchers.js';
import { question as questionTag } from '../prompt/render.js';
import { canonicalDigest } from '../state/digest.js';
import { MAX_GRANT_TEXT_LENGTH, type Grant, type NewGrant } from '../store/grantStore.js';

/** What a grant pins, as its record's `scope` holds it (JSON). */
export interface GrantScope {
  /** Each argument's matcher with its pinned value. */
  readonly arguments: PinnedArguments;
  /** The resource the tool pins besides the arguments (e.g. a directory by device and inode), `null` when none. */
  readonly pin: unknown;
}

/** The terms of a grant offered in one question, as a tool's `grantOffer` receives them. */
export interface GrantTerms<A, F> {
  /** The tool's name. */
  readonly tool: string;
  /** The call asked about. */
  readonly args: A;
  /** Its fingerprint (round 1). */
  readonly fingerprint: F;
  /** The operator's policy for the tool. */
  readonly policy: GrantPolicy;
  /** The arguments' matchers with their pinned values. */
  readonly pinned: PinnedArguments;
  /** What the tool pins besides (its `grantPin`), `null` when none. */
  readonly pin: unknown;
  /** How long the grant lasts, in words: `15 minutes`, `1 hour`, `90 seconds`. */
  readonly duration: string;
}

/** An offer made in one question: its terms, the line the human reads, and the digest sealed with the question. */
export interface GrantOffer {
  readonly scope: GrantScope;
  readonly policy: GrantPolicy;
  readonly policyDigest: string;
  /** The offer's line in the question (also the grant's `summary`). */
  readonly line: string;
  /** SHA-256 (unpadded base64url) of the RFC 8785 form of the terms: sealed in the question's digest. */
  readonly digest: string;
}

/** A number of seconds in words: whole hours, else whole minutes, else seconds (`1 hour`, `15 minutes`, `90 seconds`). */
export function durationText(seconds: number): string {
  if (seconds % 3600 === 0) return countOf(seconds / 3600, 'hour');
  if (seconds % 60 === 0) return countOf(seconds / 60, 'minute');
  return countOf(seconds, 'second');
}

/**
 * Time left until `expiresAtMs`, in words, **rounded up**: whole seconds below two minutes
 * (`90 seconds`, `1 second`, `0 seconds` once ended), else whole minutes (`15 minutes`). So it never
 * reads less than is left, and right after a grant is made it reads what the offer said (`for 15
 * minutes` is followed by `15 minutes`, not `14`); it may read up to a minute more than is left.
 *
 * @param expiresAtMs - the end, Unix milliseconds (exclusive).
 * @param nowMs - now, Unix milliseconds.
 */
export function timeLeftText(expiresAtMs: number, nowMs: number): string {
  const seconds = Math.max(0, Math.ceil((expiresAtMs - nowMs) / 1000));
  if (seconds < 120) return countOf(seconds, 'second');
  return countOf(Math.ceil(seconds / 60), 'minute');
}

/** `1 call`, `2 calls`, `0 calls`: a count with the noun in the right number. */
export function countOf(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/**
 * The line of a result that created a grant: how many more calls it covers and for how long, the
 * verb agreeing with the count (`1 more call like this one needs no question`, `19 more calls …
 * need …`).
 */
export function grantedNote(id: string, moreUses: number, timeLeft: string): string {
  return (
    `Granted (grant ${id}): ${countOf(moreUses, 'more call')} like this one ${moreUses === 1 ? 'needs' : 'need'} ` +
    `no question for ${timeLeft}; each is still checked before it runs.`
  );
}

/** What a grant has left after a use: `18 more calls and 15 minutes left`, `1 more call and …`, `no more calls: the grant is used up`. */
export function grantLeftText(usesLeft: number, timeLeft: string): string {
  return usesLeft === 0
    ? 'no more calls: the grant is used up'
    : `${countOf(usesLeft, 'more call')} and ${timeLeft} left`;
}

/** What a plan has left after a slot is taken: `2 of its calls left`, `1 of its calls left`, `none of its calls left`. */
export function planLeftText(slotsLeft: number): string {
  return slotsLeft === 0 ? 'none of its calls left' : `${slotsLeft} of its calls left`;
}

/** The line of a result that acted under a grant: `Done under grant ID (no question asked): 18 more calls and 15 minutes left.` */
export function underGrantNote(id: string, usesLeft: number, timeLeft: string): string {
  return `Done under grant ${id} (no question asked): ${grantLeftText(usesLeft, timeLeft)}.`;
}

/** The line of a result that acted under a plan slot: `Done under plan ID, approved before (no question asked): 2 of its calls left.` */
export function underPlanNote(id: string, slotsLeft: number): string {
  return `Done under plan ${id}, approved before (no question asked): ${planLeftText(slotsLeft)}.`;
}

/**
 * The line added to a refusal after a grant's use was taken (the action then refused: the file
 * changed, went away, became a link, left the roots): the use is spent all the same.
 */
export function grantUseSpentNote(id: string, usesLeft: number, timeLeft: string): string {
  return `This call used one use of grant ${id} although nothing was done: ${grantLeftText(usesLeft, timeLeft)}.`;
}

/**
 * The line added to a refusal after a plan slot was taken: the slot is used all the same, and the
 * same call is asked from now on.
 */
export function planSlotSpentNote(id: string, slotsLeft: number): string {
  return (
    `This call used its slot of plan ${id} although nothing was done: the slot cannot be used again, ` +
    `and the same call is asked from now on (${planLeftText(slotsLeft)}).`
  );
}

/** The generic offer line: which arguments may vary and how, for how long, how many calls. */
export function defaultOfferLine<A, F>(terms: GrantTerms<A, F>): string {
  const parts: string[] = [];
  for (const [name, pinned] of Object.entries(terms.pinned)) {
    switch (pinned.matcher) {
      case 'any':
        parts.push(questionTag`${name} any value`);
        break;
      case 'same-directory':
        parts.push(questionTag`${name} any path directly in ${directoryText(pinned.absolute, pinned.directory)}`);
        break;
      case 'subtree':
        parts.push(questionTag`${name} any path in or below ${directoryText(pinned.absolute, pinned.directory)}`);
        break;
      case 'at-most':
        parts.push(
          pinned.limit < 0
            ? questionTag`${name} from ${String(pinned.limit)} to 0`
            : questionTag`${name} from 0 to ${String(pinned.limit)}`,
        );
        break;
      default:
        break;
    }
  }
  const varying = parts.length === 0 ? 'with exactly these arguments' : `with ${parts.join(', ')}`;
  const exact = Object.values(terms.pinned).some((p) => p.matcher === 'exact') && parts.length > 0;
  return (
    questionTag`Or allow: calls of ${terms.tool} ` +
    `${varying}${exact ? ' (every other argument exactly as here)' : ''} for ${terms.duration}, ` +
    `at most ${countOf(terms.policy.maxUses, 'call')} in all; each is still checked before it runs.`
  );
}

/** A pinned directory as text: its segments joined with `/`, a trailing `/`, `/` first when absolute (`./` for the relative empty one). */
export function directoryText(absolute: boolean, directory: readonly string[]): string {
  if (directory.length === 0) return absolute ? '/' : './';
  return `${absolute ? '/' : ''}${directory.join('/')}/`;
}

/**
 * The grant offered in the question of one call, or `undefined` when none is (no policy, the
 * arguments cannot be pinned, the tool's pin says no, or the line would be too long to keep).
 *
 * @param pinOf - the tool's `grantPin` (`undefined` from it: no offer); absent: `null`.
 * @param offerLine - the tool's `grantOffer`; absent: {@link defaultOfferLine}.
 */
export function grantOffer<A, F>(
  tool: string,
  policy: GrantPolicy | undefined,
  args: A,
  fingerprint: F,
  pinOf: ((args: A, fingerprint: F, policy: GrantPolicy) => unknown) | undefined,
  offerLine: ((terms: GrantTerms<A, F>) => string) | undefined,
): GrantOffer | undefined {
  if (!policy) return undefined;
  const pinned = pinArguments(policy, args);
  if (!pinned) return undefined;
  const pin = pinOf ? pinOf(args, fingerprint, policy) : null;
  if (pin === undefined) return undefined;
  const duration = durationText(policy.maxSeconds);
  const terms: GrantTerms<A, F> = { tool, args, fingerprint, policy, pinned, pin, duration };
  const line = (offerLine ?? defaultOfferLine)(terms);
  const scope: GrantScope = { arguments: pinned, pin };
  const policyDigest = grantPolicyDigest(policy);
  let digest: string;
  try {
    digest = canonicalDigest({ scope, policyDigest, line }, 'grant offer');
  } catch {
    return undefined;
  }
  if (line.length > MAX_GRANT_TEXT_LENGTH || JSON.stringify(scope).length > MAX_GRANT_TEXT_LENGTH) return undefined;
  return { scope, policy, policyDigest, line, digest };
}

/** A random record id: unpadded base64url of 16 random bytes (22 characters). */
export function newRecordId(): string {
  return randomBytes(16).toString('base64url');
}

/** The grant record an approved offer creates (the approving call is its first use). */
export function grantRecord(
  offer: GrantOffer,
  fields: { audience: string; principal: string; tool: string; binding: string; approver: string; nowMs: number },
): NewGrant {
  return {
    id: newRecordId(),
    audience: fields.audience,
    principal: fields.principal,
    tool: fields.tool,
    scope: JSON.stringify(offer.scope),
    binding: fields.binding,
    summary: offer.line,
    policyDigest: offer.policyDigest,
    approver: fields.approver,
    maxUses: offer.policy.maxUses,
    createdAtMs: fields.nowMs,
    expiresAtMs: fields.nowMs + offer.policy.maxSeconds * 1000,
  };
}

/** Scopes read from grant records, by their JSON text (bounded: the oldest goes first). */
const SCOPES = new Map<string, GrantScope | undefined>();
const SCOPES_KEPT = 1024;

/** Freezes a parsed JSON value and everything in it (so a scope shared between calls cannot be changed). */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

/**
 * The scope a grant record holds, or `undefined` when it is not one this code wrote. Parsed once
 * per distinct record text and kept frozen (a grant is looked up on every call it may cover).
 */
export function scopeOf(grant: Grant): GrantScope | undefined {
  if (SCOPES.has(grant.scope)) return SCOPES.get(grant.scope);
  const scope = parseScope(grant.scope);
  if (SCOPES.size >= SCOPES_KEPT) SCOPES.delete(SCOPES.keys().next().value!);
  SCOPES.set(grant.scope, scope);
  return scope;
}

function parseScope(text: string): GrantScope | undefined {
  try {
    const scope = deepFreeze(JSON.parse(text) as unknown);
    if (typeof scope !== 'object' || scope === null || Array.isArray(scope)) return undefined;
    const { arguments: args } = scope as { arguments?: unknown };
    if (typeof args !== 'object' || args === null || Array.isArray(args)) return undefined;
    return Object.freeze({ arguments: args as PinnedArguments, pin: (scope as { pin?: unknown }).pin ?? null });
  } catch {
    return undefined;
  }
}

/** Appends one text block to a tool's result (after its own content). */
export function withNote(result: CallToolResult, note: string): CallToolResult {
  return { ...result, content: [...(result.content ?? []), { type: 'text', text: note }] };
}

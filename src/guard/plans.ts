/**
 * Plans ("these exact calls, once each"): the tool `confirm_plan`, whose one question lists
 * several calls of confirmed tools, and whose approval stores one slot per call. A later call
 * whose tool and exact arguments match an unused slot takes it and acts without a question,
 * re-checked against what the human saw in the plan (the flow in `confirmation.ts` does that).
 *
 * Round 1 of the plan runs every call's round-1 checks (its tool's `fingerprint`) and refuses
 * the whole plan, naming the call, when one refuses. The question numbers the calls, each
 * rendered as its own question would be. Approving acts on nothing.
 *
 * @module
 */
import type { CallToolResult, ServerContext } from '@modelcontextprotocol/server';
import { ConfirmError, ConfirmPlanError, ToolRefusalError } from '../errors.js';
import { renderValue } from '../prompt/render.js';
import { canonicalDigest } from '../state/digest.js';
import {
  DEFAULT_MAX_GRANTS_PER_PRINCIPAL,
  MAX_GRANT_TEXT_LENGTH,
  MAX_PLAN_SLOTS,
  type NewPlan,
} from '../store/grantStore.js';
import { countOf, durationText, newRecordId } from './grants.js';
import type { PlanArgs } from './planSpec.js';

/** What round 1 of a plan captured and sealed: each call's fingerprint, in order. */
export interface PlanFingerprint {
  readonly calls: ReadonlyArray<{ readonly fingerprint: unknown }>;
}

/** The part of a confirmed tool a plan uses (structurally, a `ConfirmableTool`). */
export interface PlannedTool {
  fingerprint?(args: never, ctx: ServerContext): unknown;
  question(args: never, fingerprint: never): string;
  binding?(args: never, fingerprint: never): string;
  pageValues?(args: never, fingerprint: never): Array<{ label: string; value: string }>;
}

/** One tool a plan may list: the tool and how its arguments are parsed (its input schema). */
export interface PlanEntry {
  readonly tool: PlannedTool;
  /** The arguments as the tool's handler would receive them, or `undefined` when its schema refuses them. */
  parse(args: unknown): { args: unknown } | undefined;
}

/** What the flow gives {@link PlanHooks.plan} when an approved plan is stored. */
export interface PlanContext {
  /** The audience (this server's name). */
  readonly audience: string;
  /** The principal's tag (the state's `sub`). */
  readonly principalTag: string;
  /** Who approved: an approver's name, or `'client'`. */
  readonly approver: string;
  readonly nowMs: number;
  /** The plan's expiry (the TTL from its approval), Unix milliseconds. */
  readonly expiresAtMs: number;
  /** The binding of one call, as a grant's or a slot's is computed. */
  binding(tool: PlannedTool, args: unknown, fingerprint: unknown): string;
  /** The plan's own binding (over stdio, the serving process): the store bounds live plans per principal and binding. */
  readonly planBinding: string;
  /** The key of one slot. */
  slotKey(principalTag: string, binding: string, tool: string, argsDigest: string): string;
}

/** How the flow stores and reports an approved plan. */
export interface PlanHooks<A, F> {
  /** The plan to create with the spend of its confirmation. */
  plan(args: A, fingerprint: F, ctx: ServerContext, context: PlanContext): NewPlan;
  /** The result of an approved, stored plan. */
  approved(plan: NewPlan, timeLeft: string): CallToolResult;
  /** The refusal when the store's bound on live plans is full (the confirmation is spent; nothing stored). */
  full(): ConfirmError;
}

/** The tool `confirm_plan` (structurally a `ConfirmableTool`) and its hooks. */
export interface PlanTool {
  readonly tool: {
    fingerprint(args: PlanArgs, ctx: ServerContext): Promise<PlanFingerprint>;
    question(args: PlanArgs, fingerprint: PlanFingerprint): string;
    act(): never;
    nothingDone: string;
    pageValues(args: PlanArgs, fingerprint: PlanFingerprint): Array<{ label: string; value: string }>;
  };
  readonly hooks: PlanHooks<PlanArgs, PlanFingerprint>;
}

/**
 * Builds `confirm_plan` over the tools `entryOf` finds (those registered on one server).
 *
 * @param entryOf - the tool a plan may list under a name, or `undefined`.
 * @param limits.maxCalls - most calls in one plan (10 for form answers, 50 with passkey approval).
 * @param limits.maxArgumentBytes - most bytes (UTF-8 of the JSON) of all the calls' arguments; `Infinity` for none.
 * @param ttlSeconds - how long an approved plan lasts (the confirmation's TTL), in seconds.
 */
export function planTool(
  entryOf: (tool: string) => PlanEntry | undefined,
  limits: { maxCalls: number; maxArgumentBytes: number },
  ttlSeconds: number,
): PlanTool {
  /** Each call's entry and parsed arguments; refuses the plan naming the first call that cannot be planned. */
  const resolve = (args: PlanArgs): Array<{ name: string; entry: PlanEntry; args: unknown; digest: string }> => {
    if (args.calls.length > limits.maxCalls)
      throw new ConfirmPlanError(
        `A plan holds at most ${countOf(limits.maxCalls, 'call')} when approved this way; this one has ${args.calls.length}.`,
      );
    if (Number.isFinite(limits.maxArgumentBytes)) {
      const bytes = args.calls.reduce((n, c) => n + Buffer.byteLength(JSON.stringify(c.arguments ?? {}), 'utf8'), 0);
      if (bytes > limits.maxArgumentBytes)
        throw new ConfirmPlanError(
          `A plan holds at most ${limits.maxArgumentBytes} bytes of arguments when approved this way; this one has ${bytes}.`,
        );
    }
    const seen = new Map<string, number>();
    return args.calls.map((call, i) => {
      const n = i + 1;
      const entry = entryOf(call.tool);
      if (!entry)
        throw new ConfirmPlanError(
          `Call ${n} names ${renderValue(call.tool)}, which is not a tool this server confirms.`,
        );
      const parsed = entry.parse(call.arguments ?? {});
      if (!parsed)
        throw new ConfirmPlanError(`Call ${n} (${renderValue(call.tool)}) has arguments its tool does not accept.`);
      const digest = canonicalDigest(parsed.args);
      const key = `${call.tool}\u0000${digest}`;
      const before = seen.get(key);
      if (before !== undefined)
        throw new ConfirmPlanError(`Call ${n} repeats call ${before}; each call is listed once.`);
      seen.set(key, n);
      return { name: call.tool, entry, args: parsed.args, digest };
    });
  };

  const questionOf = (entry: PlanEntry, args: unknown, fingerprint: unknown): string =>
    (entry.tool.question as (a: unknown, f: unknown) => string)(args, fingerprint);

  const tool: PlanTool['tool'] = {
    async fingerprint(args, ctx) {
      const calls = resolve(args);
      const out: Array<{ fingerprint: unknown }> = [];
      for (const [i, call] of calls.entries()) {
        try {
          const fingerprint = call.entry.tool.fingerprint
            ? await (call.entry.tool.fingerprint as (a: unknown, c: ServerContext) => unknown)(call.args, ctx)
            : null;
          if (JSON.stringify(fingerprint).length > MAX_GRANT_TEXT_LENGTH)
            throw new ConfirmPlanError(`Call ${i + 1} (${renderValue(call.name)}) is too large to keep in a plan.`);
          out.push({ fingerprint });
        } catch (e) {
          if (e instanceof ConfirmPlanError || !(e instanceof ConfirmError || e instanceof ToolRefusalError)) throw e;
          throw new ConfirmPlanError(`Call ${i + 1} (${renderValue(call.name)}) was refused: [${e.code}] ${e.message}`);
        }
      }
      return { calls: out };
    },
    question(args, fingerprint) {
      const calls = resolve(args);
      const lines = calls.map(
        (call, i) => `${i + 1}. ${questionOf(call.entry, call.args, fingerprint.calls[i]?.fingerprint ?? null)}`,
      );
      return (
        `Approve this plan of ${countOf(calls.length, 'call')}? Approving does nothing by itself: ` +
        `each call listed may then be made once, exactly as listed, within ${durationText(ttlSeconds)}, without another question; ` +
        `each is still checked before it runs.\n\n${lines.join('\n')}`
      );
    },
    act() {
      // Never called: an approved plan is stored by the flow, which answers for it.
      throw new TypeError('confirm_plan does not act');
    },
    nothingDone: 'nothing was approved',
    pageValues(args, fingerprint) {
      const values: Array<{ label: string; value: string }> = [];
      for (const [i, call] of resolve(args).entries()) {
        const fp = fingerprint.calls[i]?.fingerprint ?? null;
        const own = call.entry.tool.pageValues
          ? (call.entry.tool.pageValues as (a: unknown, f: unknown) => Array<{ label: string; value: string }>)(
              call.args,
              fp,
            )
          : Object.entries(call.args as Record<string, unknown>)
              .filter((e): e is [string, string] => typeof e[1] === 'string')
              .map(([label, value]) => ({ label, value }));
        values.push({ label: `call ${i + 1}: tool`, value: call.name });
        for (const v of own) values.push({ label: `call ${i + 1}: ${v.label}`, value: v.value });
      }
      return values;
    },
  };

  const hooks: PlanTool['hooks'] = {
    plan(args, fingerprint, _ctx, c) {
      const slots = resolve(args).map((call, i) => {
        const fp = fingerprint.calls[i]?.fingerprint ?? null;
        const binding = c.binding(call.entry.tool, call.args, fp);
        return {
          key: c.slotKey(c.principalTag, binding, call.name, call.digest),
          tool: call.name,
          identity: JSON.stringify(fp),
        };
      });
      return {
        id: newRecordId(),
        audience: c.audience,
        principal: c.principalTag,
        binding: c.planBinding,
        slots,
        approver: c.approver,
        createdAtMs: c.nowMs,
        expiresAtMs: c.expiresAtMs,
      };
    },
    approved(plan, timeLeft) {
      return {
        content: [
          {
            type: 'text',
            text:
              plan.slots.length === 1
                ? `Plan ${plan.id} approved: make its one call once, exactly as listed, within ${timeLeft}; it needs no other question. Nothing was done yet.`
                : `Plan ${plan.id} approved: make each of its ${plan.slots.length} calls once, exactly as listed, within ${timeLeft}; none needs another question. Nothing was done yet.`,
          },
        ],
      };
    },
    full() {
      return new ConfirmPlanError(
        `The store already holds as many live plans for you as it allows (counted per serving process over stdio, per principal over HTTP; ${DEFAULT_MAX_GRANTS_PER_PRINCIPAL} unless the operator set another bound); this plan was not stored and nothing was done: wait until one of your plans is used up or expires.`,
      );
    },
  };
  return { tool, hooks };
}

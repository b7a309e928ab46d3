/**
 * What the proxy will do with each upstream tool, and why, in words: the lines of
 * `mcp-confirm proxy --explain` (stdout) and the start-up line on stderr. The decision is the
 * policy's ({@link explainDecision}, the same function every call is decided by); the words name
 * the policy entry, the annotation or the default, and the command line's flags.
 *
 * @module
 */
import { PLAN_TOOL } from '../guard/planSpec.js';
import { renderValue } from '../prompt/render.js';
import { explainDecision, quorumFor, type DecisionHints, type DecisionReason, type Policy } from '../proxy/policy.js';

/** What the proxy does with a tool, as the explanation says it. */
export type ToolAction = 'ask' | 'pass' | 'deny';

/** One upstream tool's line: its name (rendered), what the proxy does, and why. */
export interface ToolExplanation {
  /** The tool's name as diagnostics show untrusted text ({@link renderValue}). */
  shown: string;
  action: ToolAction;
  /** Why, in words: the policy entry, the annotation or the default, and what else applies (grant, quorum). */
  why: string;
  /** Why, in a few words, for the start-up line (`deny[0] "exec*"`, `readOnlyHint: true`, `no annotations`). */
  short: string;
}

/** What the explanation takes from the command line. */
export interface ExplainOptions {
  confirmUnnamed: boolean;
  plans: boolean;
  /** `--approvers-required` with `--approval passkey` (the quorum floor); undefined with form approval. */
  quorumFloor: number | undefined;
}

const ACTION = { confirm: 'ask', allow: 'pass', deny: 'deny' } as const;

/** The reason in a few words. */
function shortWords(reason: DecisionReason): string {
  switch (reason.kind) {
    case 'policy':
      return `${reason.list}[${reason.index}] ${JSON.stringify(reason.glob)}`;
    case 'unnamed':
      return '--confirm-unnamed';
    case 'annotation':
      return reason.hint;
    case 'default':
      if (!reason.annotated) return 'no annotations';
      return reason.destructiveHint === true ? 'destructiveHint: true' : 'by default';
  }
}

/** The reason in words. */
function reasonWords(reason: DecisionReason): string {
  switch (reason.kind) {
    case 'policy':
      return `policy ${reason.list}[${reason.index}] ${JSON.stringify(reason.glob)}`;
    case 'unnamed':
      return 'not in the policy; --confirm-unnamed asks every such tool';
    case 'annotation':
      return `not in the policy; annotation ${reason.hint}`;
    case 'default':
      if (!reason.annotated)
        return 'not in the policy; no annotations, so the spec defaults apply (destructiveHint true): asked by default';
      if (reason.destructiveHint === true) return 'not in the policy; annotation destructiveHint: true';
      return 'not in the policy; annotations say neither readOnlyHint: true nor destructiveHint: false: asked by default';
  }
}

/**
 * Explains each tool of the upstream's list, in the list's order; with `--plans`, the proxy's own
 * `confirm_plan` last.
 *
 * @param tools - the upstream's tools as listed (name and annotations).
 */
export function explainTools(
  policy: Policy,
  tools: ReadonlyArray<{ name: string; annotations?: DecisionHints | undefined }>,
  options: ExplainOptions,
): ToolExplanation[] {
  const out = tools.map((tool): ToolExplanation => {
    const { decision, reason } = explainDecision(policy, tool.name, tool.annotations, options.confirmUnnamed);
    const extras: string[] = [];
    if (decision === 'confirm') {
      if (policy.grants?.has(tool.name)) extras.push('offers a grant (policy grants)');
      if (options.quorumFloor !== undefined) {
        const quorum = quorumFor(policy, tool.name, options.quorumFloor);
        if (quorum > 1) extras.push(`${quorum} approvers must approve`);
      }
    }
    return {
      shown: renderValue(tool.name),
      action: ACTION[decision],
      why: [reasonWords(reason), ...extras].join('; '),
      short: [shortWords(reason), ...extras].join('; '),
    };
  });
  if (options.plans)
    out.push({
      shown: renderValue(PLAN_TOOL),
      action: 'ask',
      why: "the proxy's own plans tool (--plans): one question approves the calls it lists",
      short: '--plans',
    });
  return out;
}

/** `N ask, N pass, N deny`. */
function counts(lines: readonly ToolExplanation[]): string {
  const n = (action: ToolAction) => lines.filter((l) => l.action === action).length;
  return `${n('ask')} ask, ${n('pass')} pass, ${n('deny')} deny`;
}

/**
 * The `--explain` report: a heading line, then one line per tool, `ACTION  NAME  WHY`, the names
 * padded to one column.
 *
 * @param upstream - the upstream as the serving line names it (rendered name and version).
 */
export function explainReport(upstream: string, lines: readonly ToolExplanation[]): string {
  const width = Math.min(48, Math.max(0, ...lines.map((l) => l.shown.length)));
  const heading = `${upstream}: ${lines.length} tool${lines.length === 1 ? '' : 's'} (${counts(lines)})`;
  return [heading, ...lines.map((l) => `${l.action.padEnd(4)}  ${l.shown.padEnd(width)}  ${l.why}`)].join('\n') + '\n';
}

/**
 * The start-up line's words (after `tools as listed at start-up: `): per action, how many and each
 * tool with why in a few words, e.g. ``ask 1: `write_file` (destructiveHint: true); pass 0; deny 0``.
 */
export function startupWords(lines: readonly ToolExplanation[]): string {
  return (['ask', 'pass', 'deny'] as const)
    .map((action) => {
      const these = lines.filter((l) => l.action === action);
      const names = these.map((l) => `${l.shown} (${l.short})`).join(', ');
      return `${action} ${these.length}${names === '' ? '' : `: ${names}`}`;
    })
    .join('; ');
}

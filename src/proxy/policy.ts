/**
 * The proxy's policy: which upstream tools are asked, passed or denied.
 *
 * A policy is JSON: `{"confirm": [GLOB, …], "allow": [GLOB, …], "deny": [GLOB, …], "grants": {TOOL:
 * ENTRY, …}, "quorum": {GLOB: N, …}}`, every key optional, no other key. A glob matches a whole tool name, case-sensitively; `*` matches any run
 * of characters (none included) and `?` exactly one (one UTF-16 code unit); every other character
 * matches itself. Precedence: deny > confirm > allow. A tool the policy does not name follows the
 * spec's annotation defaults (MCP 2025-11-25 and 2026-07-28, schema `ToolAnnotations`:
 * `readOnlyHint` defaults to false, `destructiveHint` to true): it is asked unless its current
 * annotations say `readOnlyHint: true` or `destructiveHint: false`; with `confirmUnnamed` every
 * such tool is asked.
 *
 * `grants` names, per tool (its whole name, not a glob), what may be granted for it: each entry is
 * read by {@link checkGrantPolicy} (`{"arguments": {NAME: MATCHER, …}, "maxUses": N, "maxSeconds":
 * S}`). A grant is only ever offered in a question, so an entry for a tool the lists deny or allow
 * is refused here; one for a tool they do not name but whose annotations let it pass is refused at
 * start-up, against the upstream's list ({@link checkGrantsAsked}).
 *
 * `quorum` names, per tool-name glob, how many distinct approvers must approve a call with passkey
 * approval (a whole number from 1 to 16): a tool's quorum is the largest of the globs that match it,
 * and never below the command line's `--approvers-required` ({@link quorumFor}).
 *
 * @module
 */
import { ConfigError } from '../errors.js';
import { checkGrantPolicy, type GrantPolicy } from '../grant/matchers.js';

/** What the proxy does with one tool. */
export type Decision = 'deny' | 'confirm' | 'allow';

/** A validated policy. */
export interface Policy {
  readonly confirm: readonly string[];
  readonly allow: readonly string[];
  readonly deny: readonly string[];
  /**
   * What may be granted, by exact tool name ({@link GrantPolicy}); absent or empty: no grant is
   * ever offered (the questions and forms are exactly those without grants).
   */
  readonly grants?: ReadonlyMap<string, GrantPolicy>;
  /**
   * How many distinct approvers must approve, per tool-name glob, in the file's order (1 to
   * {@link MAX_QUORUM}); absent or empty: every tool needs the default ({@link quorumFor}).
   */
  readonly quorum?: ReadonlyArray<readonly [glob: string, approvers: number]>;
}

/** The largest quorum a policy may ask for: 16 (the stores' `MAX_APPROVALS_REQUIRED`). */
export const MAX_QUORUM = 16;

/** The empty policy: every tool follows the annotation defaults; no grants. */
export const EMPTY_POLICY: Policy = { confirm: [], allow: [], deny: [] };

/** The subject of a grant entry's messages: `the grant for "TOOL"`. */
export function grantSubject(tool: string): string {
  return `the grant for ${JSON.stringify(tool)}`;
}

/** A grant entry that cannot be used: a {@link ConfigError} `ERR_CONFIG_GRANT` whose message begins with its subject. */
function grantError(tool: string, problem: string): ConfigError {
  const subject = grantSubject(tool);
  return new ConfigError('ERR_CONFIG_GRANT', `${subject}: ${problem}`, { subject });
}

/** A policy that cannot be used: a {@link ConfigError} `ERR_CONFIG_POLICY` whose `message` names the bad entry (`deny[2]`, the key, …). */
function policyError(message: string): ConfigError {
  return new ConfigError('ERR_CONFIG_POLICY', message);
}

const LISTS = ['confirm', 'allow', 'deny'] as const;
const KEYS: readonly string[] = [...LISTS, 'grants', 'quorum'];
/** Most entries in `grants`. */
const MAX_GRANT_ENTRIES = 1000;
/** Longest glob, in UTF-16 code units. */
const MAX_GLOB_LENGTH = 256;
/** Most globs in one list. */
const MAX_GLOBS = 1000;

/**
 * Validates a parsed policy document.
 *
 * @param value - the parsed JSON.
 * @returns the {@link Policy}.
 * @throws {ConfigError} `ERR_CONFIG_POLICY` naming the bad entry: not an object, an unknown key, a list that is not
 *   an array of strings, an empty glob, a glob with a control character or not well-formed
 *   UTF-16, a glob longer than 256 code units, more than 1000 globs in a list, `grants` not an
 *   object or with more than 1000 entries or an empty tool name.
 * @throws {ConfigError} `ERR_CONFIG_GRANT` whose message begins `the grant for "TOOL"`: a tool name
 *   longer than 256 code units, not well-formed or with a control character; an entry
 *   {@link checkGrantPolicy} refuses (naming its field); a tool the lists deny or allow.
 */
export function validatePolicy(value: unknown): Policy {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw policyError(
      'the policy must be a JSON object with the keys confirm, allow, deny, grants and quorum (each optional)',
    );
  }
  for (const key of Object.keys(value)) {
    if (!KEYS.includes(key)) {
      throw policyError(
        `unknown key ${JSON.stringify(key)}: the policy has only confirm, allow, deny, grants and quorum`,
      );
    }
  }
  const out: Record<(typeof LISTS)[number], string[]> = { confirm: [], allow: [], deny: [] };
  for (const list of LISTS) {
    const entries = (value as Record<string, unknown>)[list];
    if (entries === undefined) continue;
    if (!Array.isArray(entries)) throw policyError(`${list} must be an array of tool-name globs`);
    if (entries.length > MAX_GLOBS) throw policyError(`${list} has more than ${MAX_GLOBS} globs`);
    entries.forEach((glob: unknown, i) => {
      const where = `${list}[${i}]`;
      if (typeof glob !== 'string')
        throw policyError(`${where} must be a string (a tool-name glob), got ${glob === null ? 'null' : typeof glob}`);
      checkGlob(glob, where);
      out[list].push(glob);
    });
  }
  const grants = (value as Record<string, unknown>)['grants'];
  const quorum = (value as Record<string, unknown>)['quorum'];
  return {
    ...out,
    ...(grants === undefined ? {} : { grants: validateGrants(grants, out) }),
    ...(quorum === undefined ? {} : { quorum: validateQuorum(quorum) }),
  };
}

/** Checks one glob found at `where`. @throws {ConfigError} `ERR_CONFIG_POLICY` naming `where`. */
function checkGlob(glob: string, where: string): void {
  if (glob === '') throw policyError(`${where} is empty`);
  if (glob.length > MAX_GLOB_LENGTH) throw policyError(`${where} is longer than ${MAX_GLOB_LENGTH} characters`);
  if (!glob.isWellFormed()) throw policyError(`${where} is not well-formed UTF-16 (a lone surrogate)`);
  if (/\p{Cc}/u.test(glob)) throw policyError(`${where} contains a control character`);
}

/** Reads the `quorum` object: each key a glob (as in the lists), each value a whole number from 1 to {@link MAX_QUORUM}. */
function validateQuorum(value: unknown): ReadonlyArray<readonly [string, number]> {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw policyError('quorum must be an object of tool-name globs to numbers of approvers');
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > MAX_GLOBS) throw policyError(`quorum has more than ${MAX_GLOBS} globs`);
  return entries.map(([glob, n]) => {
    const where = `quorum[${JSON.stringify(glob)}]`;
    checkGlob(glob, where);
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 1 || n > MAX_QUORUM)
      throw policyError(`${where} must be a whole number of approvers from 1 to ${MAX_QUORUM}`);
    return [glob, n] as const;
  });
}

/**
 * A tool's quorum: the largest number of the policy's `quorum` globs that match `tool`, and never
 * below `floor` (`--approvers-required`, 1 by default); `floor` when none matches.
 */
export function quorumFor(policy: Policy, tool: string, floor = 1): number {
  let n = floor;
  for (const [glob, k] of policy.quorum ?? []) if (k > n && globMatches(glob, tool)) n = k;
  return n;
}

/** The largest quorum any tool can have under `policy` with `floor` (what the approvers must be able to meet). */
export function largestQuorum(policy: Policy, floor = 1): number {
  return Math.max(floor, ...(policy.quorum ?? []).map(([, k]) => k));
}

/**
 * Reads the `grants` object: each key a tool name (1 to 256 characters, well-formed, no control
 * character), each value through {@link checkGrantPolicy}; a tool the lists deny or allow is refused.
 */
function validateGrants(value: unknown, lists: Policy): ReadonlyMap<string, GrantPolicy> {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw policyError('grants must be an object of tool names to grant entries');
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > MAX_GRANT_ENTRIES) throw policyError(`grants has more than ${MAX_GRANT_ENTRIES} entries`);
  const out = new Map<string, GrantPolicy>();
  for (const [tool, entry] of entries) {
    if (tool === '') throw policyError('grants: a tool name is empty');
    if (tool.length > MAX_GLOB_LENGTH || !tool.isWellFormed() || /\p{Cc}/u.test(tool))
      throw grantError(
        tool,
        `the tool name must be 1 to ${MAX_GLOB_LENGTH} characters, well-formed, without control characters`,
      );
    const policy = checkGrantPolicy(entry, grantSubject(tool));
    const decision = namedDecision(lists, tool);
    if (decision === 'deny')
      throw grantError(tool, 'the policy denies this tool, so a grant for it would never be asked');
    if (decision === 'allow')
      throw grantError(tool, 'the policy allows this tool without asking, so a grant for it would never be asked');
    out.set(tool, policy);
  }
  return out;
}

/**
 * Start-up check of the grants against the upstream's tools as listed then: a grant for a listed
 * tool the policy does not name but whose annotations let it pass (`readOnlyHint: true` or
 * `destructiveHint: false`, without `confirmUnnamed`) would never be asked. A grant for a tool not
 * listed is accepted (the tool may be listed later).
 *
 * @param tools - the upstream's tools: name and annotations.
 * @throws {ConfigError} `ERR_CONFIG_GRANT` naming the first such grant.
 */
export function checkGrantsAsked(
  policy: Policy,
  tools: ReadonlyArray<{ name: string; annotations?: DecisionHints | undefined }>,
  confirmUnnamed: boolean,
): void {
  if (!policy.grants) return;
  for (const tool of tools) {
    if (!policy.grants.has(tool.name)) continue;
    if (decide(policy, tool.name, tool.annotations, confirmUnnamed) !== 'confirm')
      throw grantError(
        tool.name,
        "the upstream's annotations mark this tool read-only or not destructive and the policy does not name it, so it is never asked: add it to confirm",
      );
  }
}

/**
 * Parses and validates a policy file's text.
 *
 * @throws {ConfigError} `ERR_CONFIG_POLICY` when the text is not JSON, or `ERR_CONFIG_POLICY` / `ERR_CONFIG_GRANT`: see {@link validatePolicy}.
 */
export function parsePolicy(text: string): Policy {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw policyError(`not valid JSON (${(e as Error).message})`);
  }
  return validatePolicy(value);
}

/**
 * Whether `glob` matches the whole of `name`: `*` any run (none included), `?` one UTF-16 code
 * unit, anything else itself, case-sensitive. Iterative with one backtrack point, so linear in
 * practice and never exponential.
 */
export function globMatches(glob: string, name: string): boolean {
  let g = 0;
  let n = 0;
  let starG = -1;
  let starN = 0;
  while (n < name.length) {
    const c = glob[g];
    if (c === '*') {
      starG = g++;
      starN = n;
    } else if (c !== undefined && (c === '?' || c === name[n])) {
      g++;
      n++;
    } else if (starG >= 0) {
      g = starG + 1;
      n = ++starN;
    } else {
      return false;
    }
  }
  while (glob[g] === '*') g++;
  return g === glob.length;
}

/**
 * The decision of the policy's lists alone (deny > confirm > allow), or undefined when no glob
 * names the tool.
 */
export function namedDecision(policy: Policy, name: string): Decision | undefined {
  return namedEntry(policy, name)?.list;
}

/** The first glob naming `name`, in precedence order (deny > confirm > allow): its list, index and glob. */
function namedEntry(
  policy: Policy,
  name: string,
): { list: 'deny' | 'confirm' | 'allow'; index: number; glob: string } | undefined {
  for (const list of ['deny', 'confirm', 'allow'] as const) {
    const index = policy[list].findIndex((g) => globMatches(g, name));
    if (index >= 0) return { list, index, glob: policy[list][index]! };
  }
  return undefined;
}

/**
 * Why {@link decide} decides as it does for one tool:
 * - `policy`: the first glob that names it (`list[index]`), in precedence order;
 * - `unnamed`: the policy does not name it and `confirmUnnamed` asks every such tool;
 * - `annotation`: not named, and its annotations lift the default (`readOnlyHint: true`, checked
 *   first, or `destructiveHint: false`);
 * - `default`: not named, and its annotations (if any) do not lift the default, so it is asked.
 */
export type DecisionReason =
  | { kind: 'policy'; list: 'deny' | 'confirm' | 'allow'; index: number; glob: string }
  | { kind: 'unnamed' }
  | { kind: 'annotation'; hint: 'readOnlyHint: true' | 'destructiveHint: false' }
  | { kind: 'default'; annotated: boolean; destructiveHint: unknown };

/**
 * Decides what to do with one tool, and says why ({@link DecisionReason}); {@link decide} is its decision.
 *
 * @param policy - the validated policy.
 * @param name - the tool name.
 * @param annotations - the tool's current annotations (undefined when the tool is not listed or has none).
 * @param confirmUnnamed - ask for every tool the policy does not name.
 */
export function explainDecision(
  policy: Policy,
  name: string,
  annotations: DecisionHints | undefined,
  confirmUnnamed: boolean,
): { decision: Decision; reason: DecisionReason } {
  const named = namedEntry(policy, name);
  if (named !== undefined) return { decision: named.list, reason: { kind: 'policy', ...named } };
  if (confirmUnnamed) return { decision: 'confirm', reason: { kind: 'unnamed' } };
  // Only the boolean values the spec defines lift the default; anything else asks.
  if (annotations?.readOnlyHint === true)
    return { decision: 'allow', reason: { kind: 'annotation', hint: 'readOnlyHint: true' } };
  if (annotations?.destructiveHint === false)
    return { decision: 'allow', reason: { kind: 'annotation', hint: 'destructiveHint: false' } };
  return {
    decision: 'confirm',
    reason: { kind: 'default', annotated: annotations !== undefined, destructiveHint: annotations?.destructiveHint },
  };
}

/** The annotations the decision reads (the upstream's, as listed now). */
export interface DecisionHints {
  readOnlyHint?: unknown;
  destructiveHint?: unknown;
}

/**
 * Decides what to do with one tool.
 *
 * @param policy - the validated policy.
 * @param name - the tool name.
 * @param annotations - the tool's current annotations (undefined when the tool is not listed).
 * @param confirmUnnamed - ask for every tool the policy does not name.
 */
export function decide(
  policy: Policy,
  name: string,
  annotations: DecisionHints | undefined,
  confirmUnnamed: boolean,
): Decision {
  return explainDecision(policy, name, annotations, confirmUnnamed).decision;
}

/**
 * The proxy's policy: which upstream tools are asked, passed or denied.
 *
 * A policy is JSON: `{"confirm": [GLOB, …], "allow": [GLOB, …], "deny": [GLOB, …]}`, every key
 * optional, no other key. A glob matches a whole tool name, case-sensitively; `*` matches any run
 * of characters (none included) and `?` exactly one (one UTF-16 code unit); every other character
 * matches itself. Precedence: deny > confirm > allow. A tool the policy does not name follows the
 * spec's annotation defaults (MCP 2025-11-25 and 2026-07-28, schema `ToolAnnotations`:
 * `readOnlyHint` defaults to false, `destructiveHint` to true): it is asked unless its current
 * annotations say `readOnlyHint: true` or `destructiveHint: false`; with `confirmUnnamed` every
 * such tool is asked.
 *
 * @module
 */
import { ConfigError } from '../errors.js';

/** What the proxy does with one tool. */
export type Decision = 'deny' | 'confirm' | 'allow';

/** A validated policy. */
export interface Policy {
  readonly confirm: readonly string[];
  readonly allow: readonly string[];
  readonly deny: readonly string[];
}

/** The empty policy: every tool follows the annotation defaults. */
export const EMPTY_POLICY: Policy = { confirm: [], allow: [], deny: [] };

/** A policy that cannot be used: a {@link ConfigError} `ERR_CONFIG_POLICY` whose `message` names the bad entry (`deny[2]`, the key, …). */
function policyError(message: string): ConfigError {
  return new ConfigError('ERR_CONFIG_POLICY', message);
}

const LISTS = ['confirm', 'allow', 'deny'] as const;
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
 *   UTF-16, a glob longer than 256 code units, more than 1000 globs in a list.
 */
export function validatePolicy(value: unknown): Policy {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw policyError('the policy must be a JSON object with the keys confirm, allow and deny (each optional)');
  }
  for (const key of Object.keys(value)) {
    if (!(LISTS as readonly string[]).includes(key)) {
      throw policyError(`unknown key ${JSON.stringify(key)}: the policy has only confirm, allow and deny`);
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
      if (glob === '') throw policyError(`${where} is empty`);
      if (glob.length > MAX_GLOB_LENGTH) throw policyError(`${where} is longer than ${MAX_GLOB_LENGTH} characters`);
      if (!glob.isWellFormed()) throw policyError(`${where} is not well-formed UTF-16 (a lone surrogate)`);
      if (/\p{Cc}/u.test(glob)) throw policyError(`${where} contains a control character`);
      out[list].push(glob);
    });
  }
  return out;
}

/**
 * Parses and validates a policy file's text.
 *
 * @throws {ConfigError} `ERR_CONFIG_POLICY` when the text is not JSON, or see {@link validatePolicy}.
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
  if (policy.deny.some((g) => globMatches(g, name))) return 'deny';
  if (policy.confirm.some((g) => globMatches(g, name))) return 'confirm';
  if (policy.allow.some((g) => globMatches(g, name))) return 'allow';
  return undefined;
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
  const named = namedDecision(policy, name);
  if (named !== undefined) return named;
  if (confirmUnnamed) return 'confirm';
  // Only the boolean values the spec defines lift the default; anything else asks.
  if (annotations?.readOnlyHint === true || annotations?.destructiveHint === false) return 'allow';
  return 'confirm';
}

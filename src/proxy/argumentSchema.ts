/**
 * The proxy's check of a call's arguments against the upstream tool's `inputSchema`, before the
 * human is asked: a call the upstream would refuse is never approved first.
 *
 * The validator is the one the MCP SDK ships (`AjvJsonSchemaValidator` from
 * `@modelcontextprotocol/server/validators/ajv`: ajv with `ajv-formats`, the schema's declared
 * dialect, 2020-12 by default; draft-07 for `server-filesystem`'s schemas), in its default
 * configuration: no `useDefaults`, no `coerceTypes`, no `removeAdditional`. It runs on a copy of
 * the arguments, and the arguments hashed into the state are the arguments forwarded, unchanged.
 *
 * The check costs time linear in the arguments' size (for a given schema), whatever the caller
 * sends. So three keywords are not checked, removed from a copy of the schema before compiling it:
 * - `pattern` and `patternProperties`: their regular expressions are the upstream's, run on the
 *   caller's text, and a backtracking one (`^(a+)+$`) takes time exponential in the text's length
 *   (ReDoS). Where a schema has `patternProperties`, its `additionalProperties` goes too (which
 *   properties are "additional" depends on the patterns: ajv would run them).
 * - `uniqueItems: true`: ajv compares every pair of items unless the sibling `items` declares
 *   scalar types only, time quadratic in the number of items (20,000 objects: seconds).
 *
 * They are removed wherever they stand in the document, not only where a schema is expected: a
 * `$ref` (or `$id`, `$anchor`, `$dynamicRef`) can make any object a schema, even one under an
 * unknown keyword or inside a `const`. Every object is read as a possible schema; what removing a
 * key there could make stricter is removed too, so the check is only ever more lenient than the
 * schema, never stricter (the upstream checks the rest itself):
 * - a key removed from a `properties` map (a property named `pattern`, say, whose value is a
 *   string) takes that schema's `additionalProperties` with it;
 * - a `const` or `enum` whose value had a key removed is removed (the value would differ);
 * - whenever anything but `pattern` or `uniqueItems` was removed, every `unevaluatedProperties` in
 *   the document is removed too (what is "unevaluated" depends on what was removed).
 *
 * Other keywords cost time linear in the arguments for a given schema (`format`: measured;
 * `enum`, `const`, `required`, `dependentRequired`, `additionalProperties` next to `properties`:
 * proportional to the arguments times the upstream's own schema; `contains`, `unevaluated*`: one
 * pass), and are checked.
 *
 * A schema the validator cannot compile (an unknown `$schema`, a `$ref` it cannot resolve, an
 * invalid keyword value) is not checked here: the call goes on as before (asked, then forwarded).
 * A check that fails while it runs (the stack exhausted: arguments nested too deeply, or a schema
 * that refers to itself without end, such as `{"$ref": "#"}`) refuses the call with
 * `ERR_CONFIRM_BAD_ARGUMENT`, nothing asked or forwarded. What the validator writes to the
 * console while compiling (ajv: `unknown format "…" ignored`, the name being the upstream's) goes
 * to the `log` given, rendered.
 *
 * @module
 */
import type { Tool } from '@modelcontextprotocol/client';
import { ConfirmBadArgumentError } from '../errors.js';
import { renderValue } from '../prompt/render.js';
import { canonicalDigest } from '../state/digest.js';

/** How many compiled schemas are kept (the oldest dropped first): an upstream whose definitions change often cannot grow memory. */
export const COMPILED_SCHEMAS_KEPT = 256;

/** Most graphemes of the first problem shown in the refusal. */
const MAX_PROBLEM_GRAPHEMES = 200;

/** Most graphemes of one validator message logged. */
const MAX_LOG_GRAPHEMES = 300;

/** The refusal's detail when the check itself fails (see the module documentation). */
const UNCHECKABLE =
  "the arguments could not be checked against the tool's inputSchema (the check ran out of stack: the arguments are nested too deeply, or the schema refers to itself without end)";

/** A compiled schema: the first problem with `args`, or undefined when they match. */
type Check = (args: Record<string, unknown>) => string | undefined;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** What one walk over a value found. */
interface Walked {
  /** Something in it was removed. */
  changed: boolean;
  /** One of its own keys was removed. */
  own: boolean;
  /** What was removed may change which properties count as "evaluated" (anything but `pattern` and `uniqueItems`). */
  evaluation: boolean;
}

/**
 * Removes, in place, from `node` and everything inside it, what the module documentation lists
 * (and `unevaluatedProperties` when `unevaluated` is true).
 */
function strip(node: unknown, unevaluated: boolean): Walked {
  const walked: Walked = { changed: false, own: false, evaluation: false };
  if (Array.isArray(node)) {
    for (const item of node) {
      const w = strip(item, unevaluated);
      walked.changed ||= w.changed;
      walked.evaluation ||= w.evaluation;
    }
    return walked;
  }
  if (!isObject(node)) return walked;
  const remove = (key: string): void => {
    if (!(key in node)) return;
    delete node[key];
    walked.changed = true;
    walked.own = true;
    if (key !== 'pattern' && key !== 'uniqueItems') walked.evaluation = true;
  };
  for (const key of Object.keys(node)) {
    if (!(key in node)) continue; // Removed as a consequence of an earlier key.
    const w = strip(node[key], unevaluated);
    walked.changed ||= w.changed;
    walked.evaluation ||= w.evaluation;
    if (!w.changed) continue;
    if (key === 'const' || key === 'enum') remove(key);
    // A properties map lost a key (not merely a changed schema under one): that name is now "additional".
    if (key === 'properties' && w.own) {
      remove('additionalProperties');
      walked.evaluation = true;
    }
  }
  if (typeof node.pattern === 'string') remove('pattern');
  if (node.uniqueItems === true) remove('uniqueItems');
  if (isObject(node.patternProperties)) {
    remove('patternProperties');
    remove('additionalProperties');
  }
  if (unevaluated) remove('unevaluatedProperties');
  return walked;
}

/**
 * A copy of `schema` without the keywords that are not checked, wherever they stand, and what
 * their removal could make stricter: see the module documentation.
 */
export function withoutUncheckedKeywords(schema: unknown): unknown {
  const copy = structuredClone(schema);
  if (strip(copy, false).evaluation) strip(copy, true);
  return copy;
}

/**
 * The first problem in ajv's `errorsText` (`data/path message, data message, …`), its `data`
 * named `arguments`. (With `allErrors`, as the SDK configures it, ajv lists every problem in the
 * order it found them.)
 */
function firstProblem(text: string): string {
  const cut = text.search(/, data(?=[/ ])/);
  const first = cut < 0 ? text : text.slice(0, cut);
  return first.replace(/^data(?=[/ ])/, 'arguments');
}

type Validator = {
  getValidator(schema: unknown): (input: unknown) => { valid: boolean; errorMessage?: string | undefined };
};
let validatorClass: Promise<new () => Validator> | undefined;

/** The SDK's ajv-based validator, loaded on first use (ajv and its formats are not loaded by a proxy that never asks). */
async function sdkValidator(): Promise<Validator> {
  validatorClass ??= import('@modelcontextprotocol/server/validators/ajv').then(
    (m) => m.AjvJsonSchemaValidator as unknown as new () => Validator,
  );
  // One engine per schema: ajv caches what it compiles, and would serve a schema by its `$id` even after the upstream changed it.
  return new (await validatorClass)();
}

/** The console methods ajv's default logger calls. */
const CONSOLE_METHODS = ['log', 'warn', 'error'] as const;

/**
 * Runs `f` (synchronous) with the console's `log`, `warn` and `error` sending each message,
 * rendered, to `log` instead. (The SDK's validator gives ajv no logger option: ajv writes to the
 * console itself.)
 */
function withConsoleTo<T>(log: (line: string) => void, f: () => T): T {
  const saved = CONSOLE_METHODS.map((m) => console[m]);
  for (const m of CONSOLE_METHODS) {
    console[m] = (...parts: unknown[]) =>
      log(
        `argument check: the validator said ${renderValue(parts.map(String).join(' '), { maxGraphemes: MAX_LOG_GRAPHEMES })}`,
      );
  }
  try {
    return f();
  } finally {
    CONSOLE_METHODS.forEach((m, i) => (console[m] = saved[i]!));
  }
}

/** Compiles `inputSchema` (see the module documentation), or undefined when it cannot be compiled. */
async function compile(inputSchema: unknown, log: (line: string) => void): Promise<Check | undefined> {
  try {
    const validator = await sdkValidator();
    const validate = withConsoleTo(log, () => validator.getValidator(withoutUncheckedKeywords(inputSchema)));
    return (args) => {
      let result: ReturnType<typeof validate>;
      try {
        result = withConsoleTo(log, () => validate(structuredClone(args)));
      } catch {
        // The stack exhausted (in the copy or in ajv's recursion), or anything else: not checkable, so not asked.
        throw new ConfirmBadArgumentError(UNCHECKABLE);
      }
      return result.valid ? undefined : firstProblem(result.errorMessage ?? 'data does not match');
    };
  } catch {
    return undefined;
  }
}

/** Options of an {@link ArgumentChecker}. */
export interface ArgumentCheckerOptions {
  /** Where the validator's own messages go, one line each, rendered (default: stderr, prefixed `mcp-confirm proxy: `). */
  log?: (line: string) => void;
}

/** Checks calls' arguments against their tool's `inputSchema`, compiling each schema once. */
export class ArgumentChecker {
  /** By digest of the input schema: its check, or undefined when it cannot be compiled. */
  private readonly compiled = new Map<string, Promise<Check | undefined>>();
  private readonly log: (line: string) => void;

  constructor(options: ArgumentCheckerOptions = {}) {
    this.log = options.log ?? ((line) => void process.stderr.write(`mcp-confirm proxy: ${line}\n`));
  }

  /**
   * @param args - the call's arguments as sent (undefined: none, checked as `{}`).
   * @throws {ConfirmBadArgumentError} `ERR_CONFIRM_BAD_ARGUMENT` naming the first problem
   *   (rendered: it quotes the caller's keys and the schema's names), or saying that the
   *   arguments could not be checked (the check ran out of stack).
   */
  async check(tool: Tool, args: Record<string, unknown> | undefined): Promise<void> {
    let key: string;
    try {
      key = canonicalDigest(tool.inputSchema ?? null, 'input schema');
    } catch {
      return; // No canonical form: not compiled, forwarded as before.
    }
    let check = this.compiled.get(key);
    if (check === undefined) {
      check = compile(tool.inputSchema, this.log);
      this.compiled.set(key, check);
      if (this.compiled.size > COMPILED_SCHEMAS_KEPT) this.compiled.delete(this.compiled.keys().next().value!);
    }
    const problem = (await check)?.(args ?? {});
    if (problem !== undefined) {
      throw new ConfirmBadArgumentError(
        `the arguments do not match the tool's inputSchema: ${renderValue(problem, { maxGraphemes: MAX_PROBLEM_GRAPHEMES })}`,
      );
    }
  }
}

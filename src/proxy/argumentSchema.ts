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
 * Two keywords are not checked: `pattern` and `patternProperties`. Their regular expressions are
 * the upstream's, run on the caller's text, and a backtracking one (`^(a+)+$`) takes time
 * exponential in the text's length (ReDoS): a caller could stall the proxy with one call. Both are
 * removed from a copy of the schema before compiling it, at every place a schema can stand; where
 * a schema has `patternProperties`, its `additionalProperties` is removed too (which properties are
 * "additional" depends on the patterns: ajv would run them), and `unevaluatedProperties` everywhere
 * in that schema. So the check is only ever more lenient than the schema, never stricter; the
 * upstream checks the rest itself.
 *
 * A schema the validator cannot compile (an unknown `$schema`, a `$ref` it cannot resolve, an
 * invalid keyword value) is not checked here: the call goes on as before (asked, then forwarded).
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

/** A compiled schema: the first problem with `args`, or undefined when they match. */
type Check = (args: Record<string, unknown>) => string | undefined;

/** Keywords whose value is a schema. */
const SCHEMA_VALUED = ['additionalProperties', 'unevaluatedProperties', 'items', 'additionalItems', 'unevaluatedItems', 'contains', 'propertyNames', 'not', 'if', 'then', 'else', 'contentSchema'];
/** Keywords whose value is an array of schemas. */
const SCHEMA_ARRAYS = ['allOf', 'anyOf', 'oneOf', 'prefixItems', 'items'];
/** Keywords whose value maps names to schemas (`dependencies`: draft-07, a schema or a list of names). */
const SCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas', 'dependencies'];

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Calls `visit` on `schema` and on every schema inside it (JSON Schema 2020-12 and draft-07 keywords). */
function eachSchema(schema: unknown, visit: (s: Record<string, unknown>) => void): void {
  if (!isObject(schema)) return;
  visit(schema);
  for (const k of SCHEMA_VALUED) if (k in schema) eachSchema(schema[k], visit);
  for (const k of SCHEMA_ARRAYS) {
    const list = schema[k];
    if (Array.isArray(list)) for (const s of list) eachSchema(s, visit);
  }
  for (const k of SCHEMA_MAPS) {
    const map = schema[k];
    if (isObject(map)) for (const s of Object.values(map)) eachSchema(s, visit);
  }
}

/**
 * A copy of `schema` without `pattern` and `patternProperties` (and what depends on the latter):
 * see the module documentation.
 */
export function withoutUpstreamRegexes(schema: unknown): unknown {
  const copy = structuredClone(schema);
  let patterned = false;
  eachSchema(copy, (s) => {
    if ('patternProperties' in s) patterned = true;
  });
  eachSchema(copy, (s) => {
    delete s.pattern;
    if ('patternProperties' in s) {
      delete s.patternProperties;
      delete s.additionalProperties;
    }
    if (patterned) delete s.unevaluatedProperties;
  });
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

type Validator = { getValidator(schema: unknown): (input: unknown) => { valid: boolean; errorMessage?: string | undefined } };
let validatorClass: Promise<new () => Validator> | undefined;

/** The SDK's ajv-based validator, loaded on first use (ajv and its formats are not loaded by a proxy that never asks). */
async function sdkValidator(): Promise<Validator> {
  validatorClass ??= import('@modelcontextprotocol/server/validators/ajv').then((m) => m.AjvJsonSchemaValidator as unknown as new () => Validator);
  // One engine per schema: ajv caches what it compiles, and would serve a schema by its `$id` even after the upstream changed it.
  return new (await validatorClass)();
}

/** Compiles `inputSchema` (see the module documentation), or undefined when it cannot be compiled. */
async function compile(inputSchema: unknown): Promise<Check | undefined> {
  try {
    const validate = (await sdkValidator()).getValidator(withoutUpstreamRegexes(inputSchema));
    return (args) => {
      const result = validate(structuredClone(args));
      return result.valid ? undefined : firstProblem(result.errorMessage ?? 'data does not match');
    };
  } catch {
    return undefined;
  }
}

/** Checks calls' arguments against their tool's `inputSchema`, compiling each schema once. */
export class ArgumentChecker {
  /** By digest of the input schema: its check, or undefined when it cannot be compiled. */
  private readonly compiled = new Map<string, Promise<Check | undefined>>();

  /**
   * @param args - the call's arguments as sent (undefined: none, checked as `{}`).
   * @throws {ConfirmBadArgumentError} `ERR_CONFIRM_BAD_ARGUMENT` naming the first problem
   *   (rendered: it quotes the caller's keys and the schema's names).
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
      check = compile(tool.inputSchema);
      this.compiled.set(key, check);
      if (this.compiled.size > COMPILED_SCHEMAS_KEPT) this.compiled.delete(this.compiled.keys().next().value!);
    }
    const problem = (await check)?.(args ?? {});
    if (problem !== undefined) {
      throw new ConfirmBadArgumentError(`the arguments do not match the tool's inputSchema: ${renderValue(problem, { maxGraphemes: MAX_PROBLEM_GRAPHEMES })}`);
    }
  }
}

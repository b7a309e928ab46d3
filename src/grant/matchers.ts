/**
 * The argument matchers of grants (issue 18): what an operator allows to be granted for one tool
 * ({@link GrantPolicy}, read by {@link checkGrantPolicy}), the values a grant pins from the call the
 * human approved ({@link pinArguments}), and whether a later call's arguments are within them
 * ({@link argumentsAccepted}).
 *
 * Each top-level argument of a call has one matcher ({@link ArgumentMatcher}); an argument the
 * policy does not name is `'exact'`:
 * - `exact`: equal to the approved value as RFC 8785 JSON (JSON Canonicalization Scheme);
 * - `any`: any value;
 * - `same-directory`: a path string naming a file directly in the approved path's directory;
 * - `subtree`: a path string naming a file anywhere below the approved path's directory;
 * - `at-most`: a finite number of the approved value's sign, no further from 0 than it.
 *
 * A later call is accepted only with exactly the approved call's own argument names, each accepted
 * by its matcher.
 *
 * > [!WARNING]
 * > The path matchers are lexical: they compare `/`-separated segments of strings and pin no
 * > directory on any disk (the upstream of a proxy may run on another host and another system, so
 * > the proxy cannot look). A caller that can look at the disk pins the directory's identity
 * > (device and inode) itself, beside these matchers. To keep the lexical reading the only one on
 * > any system, a segment that some system could read as a separator, a parent, the current
 * > directory, a home directory or a drive never matches (see {@link pathSegments}).
 *
 * Pure: no I/O, no clock, no randomness. {@link pinArguments} and {@link argumentsAccepted} never
 * throw.
 *
 * @module
 */
import { DEFAULT_GRANT_MAX_SECONDS, DEFAULT_GRANT_MAX_USES, MIN_GRANT_USES } from '../defaults.js';
import canonicalize from 'canonicalize';
import { ConfigError } from '../errors.js';
import { canonicalDigest } from '../state/digest.js';
import { MAX_GRANT_USES } from '../store/grantStore.js';

/** The defaults of a grant policy's bounds, 20 uses and 900 seconds (`defaults.ts`, shared with the command line). */
export { DEFAULT_GRANT_MAX_SECONDS, DEFAULT_GRANT_MAX_USES, MIN_GRANT_USES };

/** How a grant may match one top-level argument of later calls. */
export type ArgumentMatcher = 'exact' | 'any' | 'same-directory' | 'subtree' | 'at-most';

/** Every {@link ArgumentMatcher}, in this order: `exact`, `any`, `same-directory`, `subtree`, `at-most`. */
export const ARGUMENT_MATCHERS: readonly ArgumentMatcher[] = Object.freeze([
  'exact',
  'any',
  'same-directory',
  'subtree',
  'at-most',
] as const);

/** The largest {@link GrantPolicy.maxSeconds}: 86,400 seconds (one day). */
export const MAX_GRANT_SECONDS = 86_400;

/** What the operator allows to be granted for one tool. */
export interface GrantPolicy {
  /**
   * Matcher per top-level argument name; an argument not named here is `'exact'`. From
   * {@link checkGrantPolicy}, a frozen record without a prototype (so a name like `toString` or
   * `__proto__` is only ever an own key).
   */
  readonly arguments: Readonly<Record<string, ArgumentMatcher>>;
  /** Most uses of one grant, the approving call included: 2 to `MAX_GRANT_USES` (1,000,000, from `../store/grantStore.ts`). */
  readonly maxUses: number;
  /** Longest life of one grant, in seconds: 1 to {@link MAX_GRANT_SECONDS}. */
  readonly maxSeconds: number;
}

const POLICY_KEYS = ['arguments', 'maxUses', 'maxSeconds'] as const;

/**
 * Reads one grant entry as an operator writes it, e.g. the value of `"write_file"` in a proxy
 * policy's `"grants"`: `{"arguments": {"path": "same-directory", "content": "any"}, "maxUses": 20, "maxSeconds": 900}`.
 *
 * - `arguments` (optional, default `{}`): an object of top-level argument names (non-empty) to
 *   matchers ({@link ARGUMENT_MATCHERS}); an argument not named is `'exact'`.
 * - `maxUses` (optional, default {@link DEFAULT_GRANT_MAX_USES}, 20): a whole number from 2 to
 *   `MAX_GRANT_USES` (1,000,000), the approving call included (so 1, which would allow no other
 *   call, is refused).
 * - `maxSeconds` (optional, default {@link DEFAULT_GRANT_MAX_SECONDS}, 900): a whole number from 1
 *   to {@link MAX_GRANT_SECONDS} (86,400).
 *
 * Only own, enumerable data properties are read (a plain or prototype-less object, as
 * `JSON.parse` makes); no other key is allowed. A `"__proto__"` argument name stays an own key of
 * the result and never becomes its prototype.
 *
 * @param value - the parsed JSON entry.
 * @param subject - what the entry is, for the message, e.g. `the grant for "write_file"`.
 * @returns the policy, frozen, with the defaults filled in.
 * @throws {ConfigError} `ERR_CONFIG_GRANT`, whose message begins with `subject`, then the field, then
 *   the problem, e.g. `the grant for "write_file": arguments.path: unknown matcher "prefix" (one of
 *   exact, any, same-directory, subtree, at-most)`, and whose `subject` is `subject` (`value`
 *   unset): the entry or `arguments` not an object, an unknown key, an empty argument name, a
 *   matcher not a string or unknown, `maxUses` or `maxSeconds` not a whole number in its range,
 *   `maxUses` 1 (`maxUses: must be at least 2, got 1 (…)`).
 *
 * @example
 * ```ts
 * import { checkGrantPolicy } from 'mcp-confirm';
 *
 * const policy = checkGrantPolicy({ arguments: { path: 'same-directory' } }, 'the grant for "delete_file"');
 * // { arguments: { path: 'same-directory' }, maxUses: 20, maxSeconds: 900 }
 * ```
 */
export function checkGrantPolicy(value: unknown, subject: string): GrantPolicy {
  function fail(problem: string): never {
    throw new ConfigError('ERR_CONFIG_GRANT', `${subject}: ${problem}`, { subject });
  }
  const entries = ownEntries(value);
  if (entries === undefined) {
    fail(`must be a JSON object with the keys arguments, maxUses and maxSeconds (each optional), got ${kindOf(value)}`);
  }
  const fields = new Map(entries);
  for (const key of fields.keys()) {
    if (!(POLICY_KEYS as readonly string[]).includes(key)) {
      fail(`unknown key ${JSON.stringify(key)} (one of ${POLICY_KEYS.join(', ')})`);
    }
  }

  const matchers: [string, ArgumentMatcher][] = [];
  const args = fields.get('arguments');
  if (args !== undefined) {
    const named = ownEntries(args);
    if (named === undefined) fail(`arguments: must be an object of argument names to matchers, got ${kindOf(args)}`);
    for (const [name, matcher] of named) {
      if (name === '') fail('arguments: an argument name is empty');
      const field = `arguments${fieldName(name)}`;
      if (typeof matcher !== 'string') {
        fail(`${field}: the matcher must be a string (one of ${ARGUMENT_MATCHERS.join(', ')}), got ${kindOf(matcher)}`);
      }
      if (!isMatcher(matcher)) {
        fail(`${field}: unknown matcher ${JSON.stringify(matcher)} (one of ${ARGUMENT_MATCHERS.join(', ')})`);
      }
      matchers.push([name, matcher]);
    }
  }

  const whole = (key: 'maxUses' | 'maxSeconds', fallback: number, max: number): number => {
    const given = fields.get(key);
    if (given === undefined) return fallback;
    if (typeof given !== 'number' || !Number.isInteger(given) || given < 1 || given > max) {
      fail(`${key}: must be a whole number from 1 to ${max.toLocaleString('en-US')}, got ${kindOf(given)}`);
    }
    return given;
  };
  const maxUses = whole('maxUses', DEFAULT_GRANT_MAX_USES, MAX_GRANT_USES);
  // The approving call is a grant's first use: a grant of one use would allow nothing more.
  if (maxUses < MIN_GRANT_USES) {
    fail(
      `maxUses: must be at least ${MIN_GRANT_USES}, got ${maxUses} (the approving call is a grant's first use, so a grant of 1 would allow no other call)`,
    );
  }
  const maxSeconds = whole('maxSeconds', DEFAULT_GRANT_MAX_SECONDS, MAX_GRANT_SECONDS);
  return Object.freeze({ arguments: frozenRecord(matchers), maxUses, maxSeconds });
}

/**
 * The digest of a policy, recorded with each grant it allowed (`Grant.policyDigest`): SHA-256 of the
 * RFC 8785 canonical JSON of `{arguments, maxUses, maxSeconds}`, unpadded base64url (43
 * characters). Defaults count as written: an entry `{}` and one spelling out
 * `{"arguments": {}, "maxUses": 20, "maxSeconds": 900}` have the same digest.
 *
 * @param policy - a policy, as {@link checkGrantPolicy} returns it.
 * @throws {ConfirmBadArgumentError} `ERR_CONFIRM_BAD_ARGUMENT` only for a policy made by hand that
 *   has no canonical JSON form (a lone surrogate in a name, `NaN`); never for a checked one.
 */
export function grantPolicyDigest(policy: GrantPolicy): string {
  return canonicalDigest(
    { arguments: policy.arguments, maxUses: policy.maxUses, maxSeconds: policy.maxSeconds },
    'grant policy',
  );
}

/**
 * One argument's matcher with the values pinned from the approved call. JSON-serialisable; a grant
 * keeps it as text (`Grant.scope`) and {@link argumentsAccepted} reads it back.
 *
 * - `exact`: `value`, the approved value (a JSON copy of it);
 * - `any`: nothing pinned;
 * - `same-directory`, `subtree`: whether the approved path is `absolute` (begins with `/`), and
 *   `directory`, the segments of its directory (every segment but the last; `[]` for `a.txt` or `/a.txt`);
 * - `at-most`: `limit`, the approved number (`-0` pinned as `0`).
 */
export type PinnedArgument =
  | { readonly matcher: 'exact'; readonly value: unknown }
  | { readonly matcher: 'any' }
  | {
      readonly matcher: 'same-directory' | 'subtree';
      readonly absolute: boolean;
      readonly directory: readonly string[];
    }
  | { readonly matcher: 'at-most'; readonly limit: number };

/**
 * The pinned matchers of every argument of the approved call (its own keys, exactly). From
 * {@link pinArguments}, a frozen record without a prototype.
 */
export type PinnedArguments = Readonly<Record<string, PinnedArgument>>;

/**
 * Pins the approved call's arguments under `policy`: one {@link PinnedArgument} per own key of
 * `args`, its matcher the policy's for that name (`'exact'` when the policy does not name it). A
 * policy that names an argument the call does not have is fine (that name is ignored).
 *
 * Returns undefined when this call cannot be offered a grant:
 * - `args` is not a plain object of own, enumerable data properties (as `JSON.parse` makes);
 * - an `exact` value has no RFC 8785 form (`NaN`, `Infinity`, a lone surrogate, `undefined`, a cycle);
 * - a `same-directory` or `subtree` value is not a string, or not a path whose every segment can
 *   match (not empty, `.`, `..` or `~`, no `\` or NUL: e.g. `a/../b`, `~/x`, `dir/`, `C:x` do not);
 * - an `at-most` value is not a finite number;
 * - the policy names a matcher that is not one of {@link ARGUMENT_MATCHERS} (a policy made by hand).
 *
 * A path with no directory part pins the empty directory: `a.txt` pins `[]` relative (the
 * directory the upstream resolves relative paths against, whatever it is: `same-directory` then
 * accepts any bare file name, `subtree` any relative path), `/a.txt` pins `[]` absolute (the root).
 *
 * Never throws.
 *
 * @example
 * ```ts
 * import { checkGrantPolicy, pinArguments } from 'mcp-confirm';
 *
 * const policy = checkGrantPolicy({ arguments: { path: 'same-directory' } }, 'the grant for "delete_file"');
 * pinArguments(policy, { path: '/srv/cache/a.tmp' });
 * // { path: { matcher: 'same-directory', absolute: true, directory: ['srv', 'cache'] } }
 * ```
 */
export function pinArguments(policy: GrantPolicy, args: unknown): PinnedArguments | undefined {
  try {
    const entries = ownEntries(args);
    if (entries === undefined) return undefined;
    const pinned: [string, PinnedArgument][] = [];
    for (const [name, value] of entries) {
      const matcher = Object.hasOwn(policy.arguments, name) ? policy.arguments[name] : 'exact';
      const pin = pinOne(matcher, value);
      if (pin === undefined) return undefined;
      pinned.push([name, pin]);
    }
    return frozenRecord(pinned);
  } catch {
    return undefined;
  }
}

/** One argument pinned under `matcher`, or undefined when it cannot be. */
function pinOne(matcher: unknown, value: unknown): PinnedArgument | undefined {
  switch (matcher) {
    case 'exact': {
      const text = canonicalText(value);
      return text === undefined ? undefined : Object.freeze({ matcher, value: JSON.parse(text) as unknown });
    }
    case 'any':
      return Object.freeze({ matcher });
    case 'same-directory':
    case 'subtree': {
      if (typeof value !== 'string') return undefined;
      const path = pathSegments(value);
      if (path === undefined) return undefined;
      return Object.freeze({
        matcher,
        absolute: path.absolute,
        directory: Object.freeze(path.segments.slice(0, -1)),
      });
    }
    case 'at-most':
      if (typeof value !== 'number' || !Number.isFinite(value)) return undefined;
      return Object.freeze({ matcher, limit: value === 0 ? 0 : value });
    default:
      return undefined;
  }
}

/**
 * Whether a later call's arguments are within the pinned ones: `args` is a plain object with
 * exactly the pinned own key set, and every argument is accepted by its pinned matcher:
 * - `exact`: equal to the pinned value as RFC 8785 JSON;
 * - `any`: anything;
 * - `same-directory`: a path string whose every segment can match (as for `pinArguments`), as
 *   absolute as the pinned one, whose directory segments equal the pinned ones, with exactly one
 *   segment (the file name) after them;
 * - `subtree`: the same, but at least one segment after the pinned ones (a file directly in the
 *   directory or in any directory below it);
 * - `at-most`: a finite number with `0 ≤ x ≤ limit` (limit ≥ 0) or `limit ≤ x ≤ 0` (limit < 0);
 *   `-0` counts as `0`; never `NaN` or `±Infinity`, never a numeric string.
 *
 * Never throws: `pinned` malformed in any way (it may come back from a store as parsed JSON: not a
 * plain object, an unknown matcher, a missing or extra field, a field of the wrong type, a pinned
 * directory segment that could not have been pinned) is `false`.
 *
 * @param pinned - what {@link pinArguments} returned for the approved call (or its JSON, parsed).
 * @param args - the later call's arguments.
 */
export function argumentsAccepted(pinned: PinnedArguments, args: unknown): boolean {
  try {
    const matchers = ownEntries(pinned);
    const given = ownEntries(args);
    if (matchers === undefined || given === undefined || matchers.length !== given.length) return false;
    // Own keys are unique, so equal counts and every given key pinned make the two key sets equal.
    const byName = new Map(matchers);
    return given.every(([name, value]) => byName.has(name) && acceptedBy(byName.get(name), value));
  } catch {
    return false;
  }
}

/** Whether one pinned matcher (unchecked: read back from a store) accepts `value`. */
function acceptedBy(pin: unknown, value: unknown): boolean {
  const fields = ownEntries(pin);
  if (fields === undefined) return false;
  const f = new Map(fields);
  const has = (...keys: string[]): boolean => f.size === keys.length && keys.every((k) => f.has(k));
  switch (f.get('matcher')) {
    case 'exact': {
      if (!has('matcher', 'value')) return false;
      const want = canonicalText(f.get('value'));
      return want !== undefined && canonicalText(value) === want;
    }
    case 'any':
      return has('matcher');
    case 'same-directory':
    case 'subtree': {
      const absolute = f.get('absolute');
      const directory = f.get('directory');
      if (!has('matcher', 'absolute', 'directory') || typeof absolute !== 'boolean') return false;
      if (!Array.isArray(directory) || !directory.every((s): s is string => typeof s === 'string')) return false;
      // A pinned directory pathSegments would not have produced is malformed: refused as a whole (a
      // later path's segments could never equal such a segment anyway).
      const check = pathSegments((absolute ? '/' : '') + [...directory, 'f'].join('/'));
      if (check === undefined || check.segments.length !== directory.length + 1) return false;
      if (typeof value !== 'string') return false;
      const path = pathSegments(value);
      if (path === undefined || path.absolute !== absolute) return false;
      const extra = path.segments.length - directory.length;
      if (f.get('matcher') === 'same-directory' ? extra !== 1 : extra < 1) return false;
      return directory.every((segment, i) => path.segments[i] === segment);
    }
    case 'at-most': {
      const limit = f.get('limit');
      if (!has('matcher', 'limit') || typeof limit !== 'number' || !Number.isFinite(limit)) return false;
      if (typeof value !== 'number' || !Number.isFinite(value)) return false;
      return limit >= 0 ? value >= 0 && value <= limit : value <= 0 && value >= limit;
    }
    default:
      return false;
  }
}

/**
 * Splits a path for the path matchers, on `/` only: `absolute` when it begins with `/`, and its
 * segments (the last one the file name). Lexical: it reads no disk and resolves nothing.
 *
 * Returns undefined when the path cannot match: it is empty, or one of its segments never matches:
 * - an empty segment (`//`, a trailing `/`, or `/` alone, which names no file);
 * - a segment of only dots and spaces: `.`, `..`, and `...`, `.. `, `. ` or ` `, which Windows
 *   may read as `.`, `..` or nothing (it trims a name's trailing dots and spaces);
 * - `~` (a home directory to tools that expand it);
 * - a segment containing `\` (a separator on Windows), NUL, or a lone surrogate (no UTF-8 form:
 *   Node writes U+FFFD for it, so two different names could reach one file);
 * - in a relative path, a first segment containing `:` (`C:x`, `C:/x` name a drive on Windows).
 *
 * @param path - the path as the call gives it.
 * @returns `{absolute, segments}` with at least one segment, or undefined.
 *
 * @example
 * ```ts
 * import { pathSegments } from './matchers.js';
 *
 * pathSegments('/srv/cache/a.tmp'); // { absolute: true, segments: ['srv', 'cache', 'a.tmp'] }
 * pathSegments('a.tmp'); // { absolute: false, segments: ['a.tmp'] }
 * pathSegments('cache/../etc/passwd'); // undefined
 * ```
 */
export function pathSegments(path: string): { absolute: boolean; segments: string[] } | undefined {
  if (typeof path !== 'string' || path === '') return undefined;
  const absolute = path.startsWith('/');
  const segments = (absolute ? path.slice(1) : path).split('/');
  if (!segments.every(segmentCanMatch)) return undefined;
  if (!absolute && segments[0]!.includes(':')) return undefined;
  return { absolute, segments };
}

/** Whether one segment (already split on `/`) can ever match; see {@link pathSegments}. */
function segmentCanMatch(segment: string): boolean {
  return (
    segment !== '' &&
    !/^[. ]+$/.test(segment) &&
    segment !== '~' &&
    !segment.includes('\\') &&
    !segment.includes('\0') &&
    segment.isWellFormed()
  );
}

/** Whether `value` is one of {@link ARGUMENT_MATCHERS}. */
function isMatcher(value: string): value is ArgumentMatcher {
  return (ARGUMENT_MATCHERS as readonly string[]).includes(value);
}

/**
 * The own entries of a plain object (prototype `Object.prototype` or none), or undefined when
 * `value` is anything else or has a symbol key, a non-enumerable key or an accessor. Reads values
 * from the property descriptors, so no getter runs.
 */
function ownEntries(value: unknown): [string, unknown][] | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return undefined;
  const out: [string, unknown][] = [];
  for (const key of Reflect.ownKeys(value)) {
    if (typeof key !== 'string') return undefined;
    const descriptor = Object.getOwnPropertyDescriptor(value, key);
    if (descriptor === undefined || descriptor.enumerable !== true || !('value' in descriptor)) return undefined;
    out.push([key, descriptor.value]);
  }
  return out;
}

/** A frozen record without a prototype holding `entries` as own keys (`__proto__` included). */
function frozenRecord<T>(entries: readonly (readonly [string, T])[]): Readonly<Record<string, T>> {
  const record = Object.create(null) as Record<string, T>;
  for (const [key, value] of entries) {
    Object.defineProperty(record, key, { value, enumerable: true, writable: false, configurable: false });
  }
  return Object.freeze(record);
}

/** The RFC 8785 text of `value`, or undefined when it has none. */
function canonicalText(value: unknown): string | undefined {
  try {
    const text: unknown = canonicalize(value);
    return typeof text === 'string' ? text : undefined;
  } catch {
    return undefined;
  }
}

/** How an argument name reads in a field path: `.path`, or `["a b"]` when it is not a plain name. */
function fieldName(name: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$-]*$/.test(name) ? `.${name}` : `[${JSON.stringify(name)}]`;
}

/** What a refused value is, for a message: a number as written, else its kind (never a string's content). */
function kindOf(value: unknown): string {
  if (typeof value === 'number') return String(value);
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}

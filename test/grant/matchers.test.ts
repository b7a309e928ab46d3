/**
 * The argument matchers of grants (src/grant/matchers.ts): the operator's entry, the pinned values
 * of an approved call, and which later calls they accept. Examples (each refusal beside the call it
 * would be without the one change) and fast-check properties.
 */
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import {
  ARGUMENT_MATCHERS,
  DEFAULT_GRANT_MAX_SECONDS,
  DEFAULT_GRANT_MAX_USES,
  MAX_GRANT_SECONDS,
  argumentsAccepted,
  checkGrantPolicy,
  grantPolicyDigest,
  pathSegments,
  pinArguments,
  type ArgumentMatcher,
  type GrantPolicy,
  type PinnedArguments,
} from '../../src/grant/matchers.js';
import { MAX_GRANT_USES } from '../../src/store/grantStore.js';

const SUBJECT = 'the grant for "write_file"';
const RUNS = { numRuns: 300 };

/** A policy with `matchers`, checked as an operator's entry would be. */
function policyOf(matchers: Record<string, ArgumentMatcher>): GrantPolicy {
  return checkGrantPolicy({ arguments: matchers }, SUBJECT);
}

/** Pins `approved` under `matchers`, failing the test when it cannot be pinned. */
function pinned(matchers: Record<string, ArgumentMatcher>, approved: Record<string, unknown>): PinnedArguments {
  const pin = pinArguments(policyOf(matchers), approved);
  if (pin === undefined) throw new Error(`could not pin ${JSON.stringify(approved)}`);
  return pin;
}

/** The ConfigError `checkGrantPolicy(value)` throws (fails the test when it throws none). */
function refusal(value: unknown): ConfigError {
  try {
    checkGrantPolicy(value, SUBJECT);
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  throw new Error('no refusal');
}

describe('checkGrantPolicy reads an operator entry', () => {
  it('fills the defaults (no argument named, 20 uses, 900 seconds) for an empty entry', () => {
    const policy = checkGrantPolicy({}, SUBJECT);
    expect({ ...policy.arguments }).toEqual({});
    expect(policy.maxUses).toBe(DEFAULT_GRANT_MAX_USES);
    expect(policy.maxSeconds).toBe(DEFAULT_GRANT_MAX_SECONDS);
    expect([DEFAULT_GRANT_MAX_USES, DEFAULT_GRANT_MAX_SECONDS, MAX_GRANT_SECONDS]).toEqual([20, 900, 86_400]);
    expect(ARGUMENT_MATCHERS).toEqual(['exact', 'any', 'same-directory', 'subtree', 'at-most']);
  });

  it('reads a full entry as written, frozen', () => {
    const policy = checkGrantPolicy(
      JSON.parse('{"arguments": {"path": "same-directory", "content": "any"}, "maxUses": 5, "maxSeconds": 60}'),
      SUBJECT,
    );
    expect({ ...policy.arguments }).toEqual({ path: 'same-directory', content: 'any' });
    expect([policy.maxUses, policy.maxSeconds]).toEqual([5, 60]);
    expect(Object.isFrozen(policy) && Object.isFrozen(policy.arguments)).toBe(true);
    // the bounds themselves are accepted
    expect(checkGrantPolicy({ maxUses: 2, maxSeconds: 1 }, SUBJECT)).toMatchObject({ maxUses: 2, maxSeconds: 1 });
    expect(checkGrantPolicy({ maxUses: MAX_GRANT_USES, maxSeconds: MAX_GRANT_SECONDS }, SUBJECT)).toMatchObject({
      maxUses: MAX_GRANT_USES,
      maxSeconds: MAX_GRANT_SECONDS,
    });
  });

  it('keeps a "__proto__" argument name an own key, never the prototype; inherited names are not matchers', () => {
    const policy = checkGrantPolicy(JSON.parse('{"arguments": {"__proto__": "any", "path": "subtree"}}'), SUBJECT);
    expect(Object.keys(policy.arguments)).toEqual(['__proto__', 'path']);
    expect(Object.getPrototypeOf(policy.arguments)).toBe(null);
    expect(policy.arguments['__proto__']).toBe('any');
    // no name reaches Object.prototype: an argument called toString is not named, so exact
    expect(policy.arguments['toString']).toBeUndefined();
    const pin = pinArguments(policy, JSON.parse('{"__proto__": {"a": 1}, "toString": "x"}'));
    expect(pin?.['__proto__']).toEqual({ matcher: 'any' });
    expect(pin?.['toString']).toEqual({ matcher: 'exact', value: 'x' });
  });

  it.each<[string, unknown, string]>([
    [
      'an entry that is not an object',
      [],
      'must be a JSON object with the keys arguments, maxUses and maxSeconds (each optional), got an array',
    ],
    [
      'a null entry',
      null,
      'must be a JSON object with the keys arguments, maxUses and maxSeconds (each optional), got null',
    ],
    ['an unknown key', { maxUse: 3 }, 'unknown key "maxUse" (one of arguments, maxUses, maxSeconds)'],
    [
      'arguments not an object',
      { arguments: ['path'] },
      'arguments: must be an object of argument names to matchers, got an array',
    ],
    ['an empty argument name', { arguments: { '': 'any' } }, 'arguments: an argument name is empty'],
    [
      'an unknown matcher',
      { arguments: { path: 'prefix' } },
      'arguments.path: unknown matcher "prefix" (one of exact, any, same-directory, subtree, at-most)',
    ],
    [
      'an unknown matcher of a name that is not a plain word',
      { arguments: { 'a.b': 'Exact' } },
      'arguments["a.b"]: unknown matcher "Exact" (one of exact, any, same-directory, subtree, at-most)',
    ],
    [
      'a matcher that is not a string',
      { arguments: { path: true } },
      'arguments.path: the matcher must be a string (one of exact, any, same-directory, subtree, at-most), got a boolean',
    ],
    ['maxUses 0', { maxUses: 0 }, 'maxUses: must be a whole number from 1 to 1,000,000, got 0'],
    [
      'maxUses 1 (a grant that would allow no call besides the approving one; control: 2 above)',
      { maxUses: 1 },
      "maxUses: must be at least 2, got 1 (the approving call is a grant's first use, so a grant of 1 would allow no other call)",
    ],
    [
      'maxUses above the store bound',
      { maxUses: 1_000_001 },
      'maxUses: must be a whole number from 1 to 1,000,000, got 1000001',
    ],
    ['maxUses not whole', { maxUses: 2.5 }, 'maxUses: must be a whole number from 1 to 1,000,000, got 2.5'],
    ['maxUses a string', { maxUses: '20' }, 'maxUses: must be a whole number from 1 to 1,000,000, got a string'],
    [
      'maxSeconds above a day',
      { maxSeconds: 86_401 },
      'maxSeconds: must be a whole number from 1 to 86,400, got 86401',
    ],
    ['maxSeconds negative', { maxSeconds: -1 }, 'maxSeconds: must be a whole number from 1 to 86,400, got -1'],
  ])('refuses %s with ERR_CONFIG_GRANT naming the subject and the field', (_what, value, problem) => {
    const error = refusal(value);
    expect(error.code).toBe('ERR_CONFIG_GRANT');
    expect(error.message).toBe(`${SUBJECT}: ${problem}`);
    expect(error.subject).toBe(SUBJECT);
    expect(error.value).toBeUndefined();
  });

  it('accepts the corrected entries (controls of the refusals)', () => {
    expect(() => checkGrantPolicy({ maxUses: 3 }, SUBJECT)).not.toThrow();
    expect(() => checkGrantPolicy({ arguments: { path: 'same-directory' } }, SUBJECT)).not.toThrow();
    expect(() => checkGrantPolicy({ arguments: { a: 'any' } }, SUBJECT)).not.toThrow();
    expect(() => checkGrantPolicy({ arguments: { 'a.b': 'exact' } }, SUBJECT)).not.toThrow();
    expect(() => checkGrantPolicy({ maxUses: 1_000_000, maxSeconds: 86_400 }, SUBJECT)).not.toThrow();
  });

  it('reads own data properties only: an inherited key, an accessor or a class instance is refused', () => {
    const inherited = Object.create({ maxUses: 3 }) as object;
    expect(refusal(inherited).message).toMatch(/^the grant for "write_file": must be a JSON object/);
    const getter = {
      get maxUses() {
        return 3;
      },
    };
    expect(refusal(getter).message).toMatch(/^the grant for "write_file": must be a JSON object/);
    expect(refusal(new (class Entry {})()).message).toMatch(/must be a JSON object/);
    expect(refusal({ arguments: new Map([['path', 'any']]) }).message).toMatch(
      /^the grant for "write_file": arguments: must be/,
    );
    // control: the same keys as plain data
    expect(checkGrantPolicy({ maxUses: 3 }, SUBJECT).maxUses).toBe(3);
    expect(checkGrantPolicy(Object.assign(Object.create(null) as object, { maxUses: 3 }), SUBJECT).maxUses).toBe(3);
  });
});

describe('grantPolicyDigest', () => {
  it('is the unpadded base64url SHA-256 of the RFC 8785 form, defaults counted as written', () => {
    const policy = checkGrantPolicy({ arguments: { path: 'subtree', content: 'any' } }, SUBJECT);
    const text = '{"arguments":{"content":"any","path":"subtree"},"maxSeconds":900,"maxUses":20}';
    expect(grantPolicyDigest(policy)).toBe(createHash('sha256').update(text).digest('base64url'));
    expect(grantPolicyDigest(policy)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const spelled = checkGrantPolicy(
      { maxSeconds: 900, arguments: { content: 'any', path: 'subtree' }, maxUses: 20 },
      SUBJECT,
    );
    expect(grantPolicyDigest(spelled)).toBe(grantPolicyDigest(policy));
  });

  it('differs for another matcher, another bound or an argument named exact explicitly', () => {
    const base = grantPolicyDigest(policyOf({ path: 'subtree' }));
    expect(grantPolicyDigest(policyOf({ path: 'same-directory' }))).not.toBe(base);
    expect(grantPolicyDigest(checkGrantPolicy({ arguments: { path: 'subtree' }, maxUses: 21 }, SUBJECT))).not.toBe(
      base,
    );
    expect(grantPolicyDigest(policyOf({ path: 'subtree', mode: 'exact' }))).not.toBe(base);
    expect(grantPolicyDigest(policyOf({ path: 'subtree' }))).toBe(base);
  });
});

describe('pathSegments splits on / only and refuses segments that never match', () => {
  it.each<[string, { absolute: boolean; segments: string[] }]>([
    ['/srv/cache/a.tmp', { absolute: true, segments: ['srv', 'cache', 'a.tmp'] }],
    ['cache/a.tmp', { absolute: false, segments: ['cache', 'a.tmp'] }],
    ['a.tmp', { absolute: false, segments: ['a.tmp'] }],
    ['/a.tmp', { absolute: true, segments: ['a.tmp'] }],
    ['.hidden/..x/x.', { absolute: false, segments: ['.hidden', '..x', 'x.'] }],
    ['/~user/a~/x', { absolute: true, segments: ['~user', 'a~', 'x'] }],
    ['/d/C:x', { absolute: true, segments: ['d', 'C:x'] }],
    ['d/10:00.log', { absolute: false, segments: ['d', '10:00.log'] }],
  ])('splits %j', (path, expected) => {
    expect(pathSegments(path)).toEqual(expected);
  });

  it.each([
    ['', 'the empty path'],
    ['/', 'the root alone (no file)'],
    ['/srv/cache/', 'a trailing /'],
    ['/srv//a', 'an empty segment'],
    ['//server/share/a', 'a leading // (a UNC path on Windows)'],
    ['/srv/../etc/passwd', 'a .. segment'],
    ['..', 'a bare ..'],
    ['/srv/./a', 'a . segment'],
    ['/srv/.../a', 'a ... segment (Windows trims trailing dots)'],
    ['/srv/.. /a', 'a ".. " segment (Windows trims trailing spaces)'],
    ['~/a', 'a ~ segment'],
    ['/srv/~/a', 'a ~ segment inside'],
    ['/srv\\a', 'a backslash'],
    ['/srv/a\0b', 'a NUL'],
    ['/srv/\uD800', 'a lone surrogate'],
    ['C:/Windows/x', 'a drive as a relative first segment'],
    ['C:x', 'a drive-relative name'],
  ])('refuses %j (%s)', (path) => {
    expect(pathSegments(path)).toBeUndefined();
  });
});

describe('the exact matcher (the default)', () => {
  const pin = pinned({}, { path: '/srv/a', options: { recursive: false, depth: 2 } });

  it('accepts the same values as RFC 8785 JSON (key order and number spelling do not matter)', () => {
    expect(argumentsAccepted(pin, { options: { depth: 2.0, recursive: false }, path: '/srv/a' })).toBe(true);
  });

  it('refuses any other value (control: the same call is accepted)', () => {
    expect(argumentsAccepted(pin, { path: '/srv/b', options: { recursive: false, depth: 2 } })).toBe(false);
    expect(argumentsAccepted(pin, { path: '/srv/a', options: { recursive: false, depth: '2' } })).toBe(false);
    expect(argumentsAccepted(pin, { path: '/srv/a', options: { recursive: false, depth: 2, extra: null } })).toBe(
      false,
    );
    expect(argumentsAccepted(pin, { path: '/srv/a', options: { recursive: false, depth: 2 } })).toBe(true);
  });

  it('pins a JSON copy of the approved value, so changing the caller object later changes nothing', () => {
    const options = { depth: 2 };
    const own = pinned({}, { options });
    options.depth = 3;
    expect(argumentsAccepted(own, { options: { depth: 2 } })).toBe(true);
    expect(argumentsAccepted(own, { options: { depth: 3 } })).toBe(false);
  });

  it('cannot pin a value with no canonical JSON form (control: a finite number)', () => {
    expect(pinArguments(policyOf({}), { n: Number.NaN })).toBeUndefined();
    expect(pinArguments(policyOf({}), { n: Infinity })).toBeUndefined();
    expect(pinArguments(policyOf({}), { s: 'a\uDC00' })).toBeUndefined();
    expect(pinArguments(policyOf({}), { u: undefined })).toBeUndefined();
    expect(pinArguments(policyOf({}), { n: 1 })).toEqual({ n: { matcher: 'exact', value: 1 } });
  });
});

describe('the any matcher', () => {
  const pin = pinned({ content: 'any' }, { path: '/srv/a', content: 'old text' });

  it('accepts any value of that argument, of any type', () => {
    for (const content of ['new text', '', 42, null, { a: [1] }, ['x']]) {
      expect(argumentsAccepted(pin, { path: '/srv/a', content })).toBe(true);
    }
  });

  it('still needs the argument present and every other argument accepted (control: both right)', () => {
    expect(argumentsAccepted(pin, { path: '/srv/a' })).toBe(false);
    expect(argumentsAccepted(pin, { path: '/srv/b', content: 'x' })).toBe(false);
    expect(argumentsAccepted(pin, { path: '/srv/a', content: 'x' })).toBe(true);
  });
});

describe('the same-directory matcher', () => {
  const pin = pinned({ path: 'same-directory' }, { path: '/srv/cache/a.tmp' });

  it('pins the directory segments and the absoluteness of the approved path', () => {
    expect(pin).toEqual({ path: { matcher: 'same-directory', absolute: true, directory: ['srv', 'cache'] } });
  });

  it('accepts another file directly in that directory, and the approved one', () => {
    expect(argumentsAccepted(pin, { path: '/srv/cache/b.tmp' })).toBe(true);
    expect(argumentsAccepted(pin, { path: '/srv/cache/a.tmp' })).toBe(true);
  });

  it.each([
    ['/srv/cache/sub/b.tmp', 'a file below the directory'],
    ['/srv/cache', 'the directory itself'],
    ['/srv/other/b.tmp', 'a sibling directory'],
    ['/srv/cachex/b.tmp', 'a directory whose name starts the same'],
    ['/srv/cache/../etc/b.tmp', 'a .. segment'],
    ['/srv/cache/./b.tmp', 'a . segment'],
    ['/srv/cache//b.tmp', 'an empty segment'],
    ['/srv/cache/b.tmp/', 'a trailing /'],
    ['/srv/cache\\b.tmp', 'a backslash'],
    ['srv/cache/b.tmp', 'the relative form of the same path'],
    ['/srv/Cache/b.tmp', 'another case'],
  ])('refuses %j (%s); control: /srv/cache/b.tmp is accepted', (path) => {
    expect(argumentsAccepted(pin, { path })).toBe(false);
    expect(argumentsAccepted(pin, { path: '/srv/cache/b.tmp' })).toBe(true);
  });

  it('refuses a value that is not a string (control: a string)', () => {
    expect(argumentsAccepted(pin, { path: ['/srv/cache/b.tmp'] })).toBe(false);
    expect(argumentsAccepted(pin, { path: { toString: () => '/srv/cache/b.tmp' } })).toBe(false);
    expect(argumentsAccepted(pin, { path: '/srv/cache/b.tmp' })).toBe(true);
  });

  it('a bare file name pins the empty relative directory: other bare names only', () => {
    const bare = pinned({ path: 'same-directory' }, { path: 'a.txt' });
    expect(bare).toEqual({ path: { matcher: 'same-directory', absolute: false, directory: [] } });
    expect(argumentsAccepted(bare, { path: 'b.txt' })).toBe(true);
    expect(argumentsAccepted(bare, { path: 'd/b.txt' })).toBe(false);
    expect(argumentsAccepted(bare, { path: '/b.txt' })).toBe(false);
    expect(argumentsAccepted(bare, { path: 'C:b.txt' })).toBe(false); // a drive-relative name on Windows
    expect(argumentsAccepted(bare, { path: '~' })).toBe(false);
  });

  it('a file at the root pins the empty absolute directory: other files at the root only', () => {
    const root = pinned({ path: 'same-directory' }, { path: '/a.txt' });
    expect(root).toEqual({ path: { matcher: 'same-directory', absolute: true, directory: [] } });
    expect(argumentsAccepted(root, { path: '/b.txt' })).toBe(true);
    expect(argumentsAccepted(root, { path: 'b.txt' })).toBe(false);
    expect(argumentsAccepted(root, { path: '/etc/passwd' })).toBe(false);
  });
});

describe('the subtree matcher', () => {
  const pin = pinned({ path: 'subtree' }, { path: '/srv/cache/a.tmp' });

  it('accepts a file in the directory or in any directory below it', () => {
    expect(argumentsAccepted(pin, { path: '/srv/cache/b.tmp' })).toBe(true);
    expect(argumentsAccepted(pin, { path: '/srv/cache/x/y/z.tmp' })).toBe(true);
  });

  it.each([
    ['/srv/cache', 'the directory itself'],
    ['/srv', 'a parent'],
    ['/srv/cachex/b.tmp', 'a directory whose name starts the same'],
    ['/srv/cache/x/../../../etc/passwd', 'a .. segment'],
    ['/srv/cache/x/../b.tmp', 'a .. segment that would stay inside'],
    ['/srv/cache/~/b.tmp', 'a ~ segment'],
    ['srv/cache/b.tmp', 'the relative form'],
    ['/srv/cache/x/', 'a trailing /'],
  ])('refuses %j (%s); control: /srv/cache/x/b.tmp is accepted', (path) => {
    expect(argumentsAccepted(pin, { path })).toBe(false);
    expect(argumentsAccepted(pin, { path: '/srv/cache/x/b.tmp' })).toBe(true);
  });

  it('a bare file name pins the relative top: any relative path without a segment that never matches', () => {
    const top = pinned({ path: 'subtree' }, { path: 'a.txt' });
    expect(argumentsAccepted(top, { path: 'd/e/b.txt' })).toBe(true);
    expect(argumentsAccepted(top, { path: '/d/b.txt' })).toBe(false);
    expect(argumentsAccepted(top, { path: '../b.txt' })).toBe(false);
    expect(argumentsAccepted(top, { path: 'C:/Windows/b.txt' })).toBe(false);
    expect(argumentsAccepted(top, { path: 'd/C:x' })).toBe(true); // a colon past the first segment is a name
  });
});

describe('the path matchers cannot pin a path that never matches', () => {
  it.each([
    ['/srv/../a', 'a .. segment'],
    ['/srv/cache/', 'a trailing /'],
    ['~/a', 'a ~ segment'],
    ['', 'the empty path'],
    ['C:\\a', 'a backslash'],
  ])('%j (%s): no grant offered; control: /srv/cache/a is pinned', (path) => {
    for (const matcher of ['same-directory', 'subtree'] as const) {
      expect(pinArguments(policyOf({ path: matcher }), { path })).toBeUndefined();
      expect(pinArguments(policyOf({ path: matcher }), { path: '/srv/cache/a' })).toBeDefined();
    }
  });

  it('refuses a path value that is not a string (control: exact pins it)', () => {
    expect(pinArguments(policyOf({ path: 'subtree' }), { path: 7 })).toBeUndefined();
    expect(pinArguments(policyOf({ path: 'subtree' }), { path: ['a', 'b'] })).toBeUndefined();
    expect(pinArguments(policyOf({}), { path: 7 })).toBeDefined();
  });
});

describe('the at-most matcher', () => {
  const positive = pinned({ n: 'at-most' }, { n: 5 });
  const negative = pinned({ n: 'at-most' }, { n: -3 });
  const zero = pinned({ n: 'at-most' }, { n: -0 });

  it('pins the approved number, -0 as 0', () => {
    expect(positive).toEqual({ n: { matcher: 'at-most', limit: 5 } });
    expect(Object.is((zero['n'] as { limit: number }).limit, 0)).toBe(true);
  });

  it('accepts 0 to the limit for a positive limit, the limit to 0 for a negative one, -0 as 0', () => {
    for (const n of [0, -0, 2.5, 5]) expect(argumentsAccepted(positive, { n })).toBe(true);
    for (const n of [0, -0, -1.5, -3]) expect(argumentsAccepted(negative, { n })).toBe(true);
    for (const n of [0, -0]) expect(argumentsAccepted(zero, { n })).toBe(true);
  });

  it('refuses above the limit, the other sign, NaN, infinities and numeric strings (control: the limit)', () => {
    for (const n of [5.000001, 6, -1, -Number.MIN_VALUE, Number.NaN, Infinity, -Infinity, '5', null, 5n]) {
      expect(argumentsAccepted(positive, { n })).toBe(false);
    }
    for (const n of [-3.5, 1, Number.MIN_VALUE, -Infinity]) expect(argumentsAccepted(negative, { n })).toBe(false);
    for (const n of [Number.MIN_VALUE, -Number.MIN_VALUE, 1]) expect(argumentsAccepted(zero, { n })).toBe(false);
    expect(argumentsAccepted(positive, { n: 5 })).toBe(true);
    expect(argumentsAccepted(negative, { n: -3 })).toBe(true);
  });

  it('cannot pin a value that is not a finite number (control: a finite one)', () => {
    for (const n of [Number.NaN, Infinity, -Infinity, '5', null, 5n]) {
      expect(pinArguments(policyOf({ n: 'at-most' }), { n })).toBeUndefined();
    }
    expect(pinArguments(policyOf({ n: 'at-most' }), { n: 1e308 })).toBeDefined();
  });
});

describe('pinArguments and argumentsAccepted on the whole call', () => {
  it('pins every own key of the call; a policy naming an argument the call does not have is ignored', () => {
    const pin = pinArguments(policyOf({ path: 'subtree', absent: 'any' }), { path: '/a/b', mode: 'x' });
    expect(pin).toEqual({
      path: { matcher: 'subtree', absolute: true, directory: ['a'] },
      mode: { matcher: 'exact', value: 'x' },
    });
    expect(Object.getPrototypeOf(pin)).toBe(null);
    expect(Object.isFrozen(pin)).toBe(true);
  });

  it('offers no grant for arguments that are not a plain object (control: {} is pinned)', () => {
    const policy = policyOf({});
    for (const args of [null, undefined, 'x', 3, [], ['a'], new (class A {})(), new Map()]) {
      expect(pinArguments(policy, args)).toBeUndefined();
    }
    const getter = {
      get path() {
        return '/a';
      },
    };
    expect(pinArguments(policy, getter)).toBeUndefined();
    expect(pinArguments(policy, { [Symbol('s')]: 1 })).toBeUndefined();
    expect(pinArguments(policy, {})).toEqual({});
    expect(argumentsAccepted(pinArguments(policy, {})!, {})).toBe(true);
  });

  it('refuses a call with an extra or a missing argument (control: the same keys)', () => {
    const pin = pinned({ path: 'same-directory', content: 'any' }, { path: '/d/a', content: '' });
    expect(argumentsAccepted(pin, { path: '/d/b', content: '', recursive: true })).toBe(false);
    expect(argumentsAccepted(pin, { path: '/d/b' })).toBe(false);
    expect(argumentsAccepted(pin, { path: '/d/b', content: '' })).toBe(true);
  });

  it('refuses later arguments that are not a plain object, or read through a getter (control: plain)', () => {
    const pin = pinned({ path: 'any' }, { path: '/a' });
    let reads = 0;
    const getter = {
      get path() {
        reads++;
        return '/a';
      },
    };
    expect(argumentsAccepted(pin, getter)).toBe(false);
    expect(reads).toBe(0);
    const throwing = new Proxy(
      {},
      {
        ownKeys: () => {
          throw new Error('no');
        },
      },
    );
    expect(argumentsAccepted(pin, throwing)).toBe(false);
    expect(argumentsAccepted(pin, [{ path: '/a' }])).toBe(false);
    expect(argumentsAccepted(pin, null)).toBe(false);
    expect(argumentsAccepted(pin, { path: '/a' })).toBe(true);
  });

  it('accepts with the pin read back from JSON text, as a store keeps it', () => {
    const pin = pinned(
      { path: 'subtree', n: 'at-most', c: 'any' },
      JSON.parse('{"path": "/srv/a/f", "n": 3, "c": 1, "e": {"__proto__": 1}}') as Record<string, unknown>,
    );
    const back = JSON.parse(JSON.stringify(pin)) as PinnedArguments;
    const later = JSON.parse('{"path": "/srv/a/b/g", "n": 2, "c": [], "e": {"__proto__": 1}}') as unknown;
    expect(argumentsAccepted(back, later)).toBe(true);
    expect(argumentsAccepted(back, JSON.parse('{"path": "/srv/a/b/g", "n": 2, "c": [], "e": {}}'))).toBe(false);
  });

  it.each<[string, unknown]>([
    ['not an object', 'x'],
    ['an array', [{ matcher: 'any' }]],
    ['an unknown matcher', { path: { matcher: 'prefix', absolute: true, directory: ['srv'] } }],
    ['a missing field', { path: { matcher: 'subtree', directory: ['srv'] } }],
    ['an extra field', { path: { matcher: 'subtree', absolute: true, directory: ['srv'], depth: 9 } }],
    ['absolute not a boolean', { path: { matcher: 'subtree', absolute: 'yes', directory: ['srv'] } }],
    ['directory not an array', { path: { matcher: 'subtree', absolute: true, directory: 'srv' } }],
    ['a directory segment not a string', { path: { matcher: 'subtree', absolute: true, directory: [1] } }],
    ['a directory segment ..', { path: { matcher: 'subtree', absolute: true, directory: ['srv', '..'] } }],
    ['a directory segment with /', { path: { matcher: 'subtree', absolute: true, directory: ['srv/x'] } }],
    ['an empty directory segment', { path: { matcher: 'subtree', absolute: true, directory: [''] } }],
    ['a relative directory with a drive', { path: { matcher: 'subtree', absolute: false, directory: ['C:'] } }],
    ['a limit that is not a number', { path: { matcher: 'at-most', limit: '9' } }],
    ['an infinite limit', { path: { matcher: 'at-most', limit: Infinity } }],
    ['an exact pin without its value', { path: { matcher: 'exact' } }],
    ['an any pin with a field', { path: { matcher: 'any', value: 1 } }],
    [
      'a pin with a getter',
      {
        path: {
          get matcher() {
            return 'any';
          },
        },
      },
    ],
  ])('a malformed pin (%s) accepts nothing and never throws', (_what, bad) => {
    for (const path of ['/srv/x/f', '/srv/f', 'srv/f', 'C:/f', 1, 'anything']) {
      expect(argumentsAccepted(bad as PinnedArguments, { path })).toBe(false);
    }
  });

  it('the well-formed pins of that list accept their call (control of the malformed ones)', () => {
    const good: [unknown, unknown][] = [
      [{ path: { matcher: 'any' } }, 'anything'],
      [{ path: { matcher: 'subtree', absolute: true, directory: ['srv'] } }, '/srv/x/f'],
      [{ path: { matcher: 'subtree', absolute: false, directory: ['d'] } }, 'd/f'],
      [{ path: { matcher: 'at-most', limit: 9 } }, 1],
      [{ path: { matcher: 'exact', value: 'srv/f' } }, 'srv/f'],
    ];
    for (const [pin, path] of good) expect(argumentsAccepted(pin as PinnedArguments, { path })).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

/** A segment: mostly ordinary names, often one that never matches. */
const segment = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('a', 'b', 'cache', 'x.tmp', '.h', '..x', 'C:', 'é', '~u', ' a') },
  { weight: 3, arbitrary: fc.constantFrom('', '.', '..', '...', '.. ', '~', 'a\\b', 'a\0', '\uD800') },
  { weight: 2, arbitrary: fc.string({ maxLength: 4 }) },
);
const segments = fc.array(segment, { minLength: 1, maxLength: 5 });
/** A path of those segments, absolute or relative. */
const path = fc.tuple(fc.boolean(), segments).map(([abs, segs]) => (abs ? '/' : '') + segs.join('/'));
/** A number, edge cases included. */
const number = fc.oneof(
  fc.double(),
  fc.integer({ min: -10, max: 10 }),
  fc.constantFrom(0, -0, Number.NaN, Infinity, -Infinity, Number.MIN_VALUE, -Number.MIN_VALUE),
);
const names = fc.constantFrom('path', 'n', 'content', 'mode', '__proto__', 'toString', 'a b');

/** A value that fits `matcher`'s kind (a path for the path matchers, a number for at-most), not always valid. */
function valueFor(matcher: ArgumentMatcher): fc.Arbitrary<unknown> {
  switch (matcher) {
    case 'same-directory':
    case 'subtree':
      return fc.oneof({ weight: 9, arbitrary: path }, { weight: 1, arbitrary: fc.jsonValue() });
    case 'at-most':
      return fc.oneof({ weight: 9, arbitrary: number }, { weight: 1, arbitrary: fc.jsonValue() });
    default:
      return fc.oneof(fc.jsonValue(), path, number);
  }
}

/** A call: arguments, each with its matcher (the policy), as JSON.parse would make them. */
const call = fc
  .uniqueArray(fc.tuple(names, fc.constantFrom(...ARGUMENT_MATCHERS)), { selector: ([name]) => name, maxLength: 4 })
  .chain((pairs) =>
    fc.tuple(fc.constant(pairs), fc.tuple(...pairs.map(([, matcher]) => valueFor(matcher))) as fc.Arbitrary<unknown[]>),
  )
  .map(([pairs, values]) => ({
    policy: policyOf(Object.fromEntries(pairs) as Record<string, ArgumentMatcher>),
    args: Object.fromEntries(pairs.map(([name], i) => [name, values[i]])) as Record<string, unknown>,
  }));

/** Whether `value` can be pinned under `matcher`, by the rules as documented. */
function pinnable(matcher: ArgumentMatcher, value: unknown): boolean {
  switch (matcher) {
    case 'same-directory':
    case 'subtree':
      return typeof value === 'string' && pathSegments(value) !== undefined;
    case 'at-most':
      return typeof value === 'number' && Number.isFinite(value);
    case 'exact':
      try {
        return typeof canonicalize(value) === 'string';
      } catch {
        return false;
      }
    default:
      return true;
  }
}

describe('properties (fast-check)', () => {
  it('(1) the approved call is always accepted by its own pin, also read back from JSON; a pin is refused only by the rules', () => {
    fc.assert(
      fc.property(call, ({ policy, args }) => {
        const pin = pinArguments(policy, args);
        const expected = Object.entries(args).every(([name, value]) =>
          pinnable(policy.arguments[name] ?? 'exact', value),
        );
        expect(pin !== undefined).toBe(expected);
        if (pin !== undefined) {
          expect(argumentsAccepted(pin, args)).toBe(true);
          expect(argumentsAccepted(JSON.parse(JSON.stringify(pin)) as PinnedArguments, args)).toBe(true);
        }
      }),
      RUNS,
    );
  });

  it('(2) a call with an extra or a missing argument is never accepted', () => {
    fc.assert(
      fc.property(
        call,
        fc.string({ minLength: 1, maxLength: 6 }),
        fc.jsonValue(),
        fc.nat(),
        (c, extra, value, drop) => {
          const pin = pinArguments(c.policy, c.args);
          fc.pre(pin !== undefined);
          const keys = Object.keys(c.args);
          if (!keys.includes(extra)) {
            const more = Object.fromEntries([...Object.entries(c.args), [extra, value]]) as unknown;
            expect(argumentsAccepted(pin!, more)).toBe(false);
          }
          if (keys.length > 0) {
            const gone = keys[drop % keys.length];
            const fewer = Object.fromEntries(Object.entries(c.args).filter(([k]) => k !== gone)) as unknown;
            expect(argumentsAccepted(pin!, fewer)).toBe(false);
          }
        },
      ),
      RUNS,
    );
  });

  /** An approved path that can be pinned, and a later path that often shares its directory. */
  const approvedAndLater = fc
    .tuple(fc.boolean(), fc.array(fc.constantFrom('a', 'b', 'c'), { minLength: 1, maxLength: 4 }))
    .chain(([abs, approved]) =>
      fc.tuple(
        fc.constant((abs ? '/' : '') + approved.join('/')),
        fc
          .tuple(
            fc.oneof(fc.constant(abs), fc.boolean()),
            fc.nat({ max: approved.length }),
            fc.array(fc.oneof(fc.constantFrom('a', 'b', 'c'), segment), { maxLength: 3 }),
          )
          .map(([laterAbs, keep, tail]) => (laterAbs ? '/' : '') + [...approved.slice(0, keep), ...tail].join('/')),
      ),
    );

  it('(3) same-directory accepts only paths in the pinned directory; subtree only paths below it', () => {
    fc.assert(
      fc.property(approvedAndLater, ([approved, later]) => {
        const approvedParts = pathSegments(approved)!;
        const directory = approvedParts.segments.slice(0, -1);
        const laterParts = pathSegments(later);
        if (argumentsAccepted(pinned({ path: 'same-directory' }, { path: approved }), { path: later })) {
          expect(laterParts?.absolute).toBe(approvedParts.absolute);
          expect(laterParts?.segments.slice(0, -1)).toEqual(directory);
        }
        if (argumentsAccepted(pinned({ path: 'subtree' }, { path: approved }), { path: later })) {
          expect(laterParts?.absolute).toBe(approvedParts.absolute);
          expect(laterParts!.segments.length).toBeGreaterThan(directory.length);
          expect(laterParts!.segments.slice(0, directory.length)).toEqual(directory);
        }
      }),
      RUNS,
    );
  });

  it('(4) a path with a .. segment is never accepted by a path matcher', () => {
    fc.assert(
      fc.property(
        approvedAndLater,
        fc.nat(),
        fc.constantFrom('same-directory', 'subtree') as fc.Arbitrary<ArgumentMatcher>,
        ([approved, later], at, matcher) => {
          const parts = later.split('/');
          const i = at % (parts.length + 1);
          const climbing = [...parts.slice(0, i), '..', ...parts.slice(i)].join('/');
          expect(argumentsAccepted(pinned({ path: matcher }, { path: approved }), { path: climbing })).toBe(false);
        },
      ),
      RUNS,
    );
  });

  it('(5) at-most never accepts a number further from 0 than the limit, of the other sign, or not finite', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), number, (approved, later) => {
        const pin = pinned({ n: 'at-most' }, { n: approved });
        const accepted = argumentsAccepted(pin, { n: later });
        if (!Number.isFinite(later) || Math.abs(later) > Math.abs(approved)) expect(accepted).toBe(false);
        if ((approved > 0 && later < 0) || (approved < 0 && later > 0)) expect(accepted).toBe(false);
        // and exactly the documented rule
        const limit = approved === 0 ? 0 : approved;
        const rule =
          Number.isFinite(later) && (limit >= 0 ? later >= 0 && later <= limit : later <= 0 && later >= limit);
        expect(accepted).toBe(rule);
      }),
      RUNS,
    );
  });

  it('argumentsAccepted never throws, whatever it is given as a pin or as arguments', () => {
    fc.assert(
      fc.property(fc.anything(), fc.anything(), (pin, args) => {
        expect(typeof argumentsAccepted(pin as PinnedArguments, args)).toBe('boolean');
      }),
      RUNS,
    );
  });
});

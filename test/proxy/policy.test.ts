import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import {
  checkGrantsAsked,
  decide,
  explainDecision,
  globMatches,
  parsePolicy,
  validatePolicy,
} from '../../src/proxy/policy.js';

describe('policy globs', () => {
  it('* and ? match within the whole name, case-sensitively; every other character is literal', () => {
    expect(globMatches('write_*', 'write_file')).toBe(true);
    expect(globMatches('write_*', 'overwrite_file')).toBe(false);
    expect(globMatches('*_file', 'move_file')).toBe(true);
    expect(globMatches('move_fil?', 'move_file')).toBe(true);
    expect(globMatches('move_fil?', 'move_fil')).toBe(false);
    expect(globMatches('Move_file', 'move_file')).toBe(false);
    expect(globMatches('a.c', 'abc')).toBe(false);
    expect(globMatches('[ab]', 'a')).toBe(false);
    expect(globMatches('[ab]', '[ab]')).toBe(true);
    expect(globMatches('*', '')).toBe(true);
    expect(globMatches('a*b*c', 'a-b-x-c')).toBe(true);
    expect(globMatches('a*b*c', 'a-b-x-d')).toBe(false);
  });

  it('a glob of many stars against a long non-matching name ends (no exponential backtracking)', () => {
    expect(globMatches('*a*a*a*a*a*a*a*a*b', 'a'.repeat(5000))).toBe(false);
  });

  it('precedence is deny > confirm > allow; unnamed tools follow the annotation defaults or --confirm-unnamed', () => {
    const policy = validatePolicy({ deny: ['rm_*'], confirm: ['rm_*', 'mk*'], allow: ['mk*', 'read*'] });
    expect(decide(policy, 'rm_rf', { readOnlyHint: true }, false)).toBe('deny');
    expect(decide(policy, 'mkdir', { readOnlyHint: true }, false)).toBe('confirm');
    expect(decide(policy, 'read_file', { destructiveHint: true }, false)).toBe('allow');
    expect(decide(policy, 'other', { readOnlyHint: true }, false)).toBe('allow');
    expect(decide(policy, 'other', { destructiveHint: false }, false)).toBe('allow');
    expect(decide(policy, 'other', { readOnlyHint: 'true' }, false)).toBe('confirm');
    expect(decide(policy, 'other', {}, false)).toBe('confirm');
    expect(decide(policy, 'other', undefined, false)).toBe('confirm');
    expect(decide(policy, 'other', { readOnlyHint: true }, true)).toBe('confirm');
    expect(decide(policy, 'read_file', {}, true)).toBe('allow');
  });

  it('validation names the bad entry', () => {
    expect(() => validatePolicy({ allow: ['ok', null] })).toThrow(
      new ConfigError('ERR_CONFIG_POLICY', 'allow[1] must be a string (a tool-name glob), got null'),
    );
    expect(() => validatePolicy({ deny: ['\uD800'] })).toThrow('deny[0] is not well-formed UTF-16');
    expect(() => validatePolicy({ confirm: ['x'.repeat(257)] })).toThrow('confirm[0] is longer than 256 characters');
  });
});

describe('policy grants', () => {
  it('reads each entry with its defaults, by exact tool name; a policy without grants has none', () => {
    const policy = validatePolicy({
      confirm: ['write_*'],
      grants: { write_file: { arguments: { path: 'same-directory', content: 'any' }, maxUses: 5 }, edit_file: {} },
    });
    expect(policy.grants?.get('write_file')).toEqual({
      arguments: { path: 'same-directory', content: 'any' },
      maxUses: 5,
      maxSeconds: 900,
    });
    expect(policy.grants?.get('edit_file')).toEqual({ arguments: {}, maxUses: 20, maxSeconds: 900 });
    expect(policy.grants?.has('write_*')).toBe(false);
    expect(validatePolicy({ confirm: ['x'] }).grants).toBeUndefined();
  });

  it('an invalid entry is refused with ERR_CONFIG_GRANT naming the tool and the field; the same entry fixed is read (control)', () => {
    const bad = () => validatePolicy({ grants: { write_file: { arguments: { path: 'prefix' } } } });
    expect(bad).toThrow(
      new ConfigError(
        'ERR_CONFIG_GRANT',
        'the grant for "write_file": arguments.path: unknown matcher "prefix" (one of exact, any, same-directory, subtree, at-most)',
        { subject: 'the grant for "write_file"' },
      ),
    );
    expect(() => validatePolicy({ grants: { write_file: { maxUses: 0 } } })).toThrow(
      'the grant for "write_file": maxUses: must be a whole number from 1 to 1,000,000, got 0',
    );
    expect(() => validatePolicy({ grants: { write_file: { extra: 1 } } })).toThrow(
      'the grant for "write_file": unknown key "extra"',
    );
    expect(validatePolicy({ grants: { write_file: { arguments: { path: 'subtree' } } } }).grants?.size).toBe(1);
  });

  it('grants that is not an object, or an empty or control-character tool name, is refused naming it', () => {
    expect(() => validatePolicy({ grants: ['write_file'] })).toThrow(
      new ConfigError('ERR_CONFIG_POLICY', 'grants must be an object of tool names to grant entries'),
    );
    expect(() => validatePolicy({ grants: { '': {} } })).toThrow('grants: a tool name is empty');
    expect(() => validatePolicy({ grants: { 'a\nb': {} } })).toThrow('the grant for "a\\nb": the tool name must be');
  });

  it('a grant for a tool the lists deny or allow is refused (it would never be asked); confirmed or unnamed is read (control)', () => {
    expect(() => validatePolicy({ deny: ['write_*'], grants: { write_file: {} } })).toThrow(
      'the grant for "write_file": the policy denies this tool',
    );
    expect(() => validatePolicy({ allow: ['write_file'], grants: { write_file: {} } })).toThrow(
      'the grant for "write_file": the policy allows this tool without asking',
    );
    expect(
      validatePolicy({ allow: ['write_file'], confirm: ['write_file'], grants: { write_file: {} } }).grants?.size,
    ).toBe(1);
    expect(validatePolicy({ grants: { write_file: {} } }).grants?.size).toBe(1);
  });

  it('a "__proto__" tool name is an own entry like any other, never a prototype', () => {
    const policy = parsePolicy('{"grants": {"__proto__": {"maxUses": 2}}}');
    expect(policy.grants?.get('__proto__')?.maxUses).toBe(2);
    expect(Object.getPrototypeOf(policy.grants)).toBe(Map.prototype);
  });

  it('at start-up, a grant for a listed tool the annotations let pass unasked is refused; --confirm-unnamed, a confirm glob, or a tool not listed is fine (controls)', () => {
    const policy = validatePolicy({ grants: { read_file: {} } });
    const tools = [{ name: 'read_file', annotations: { readOnlyHint: true } }];
    expect(() => checkGrantsAsked(policy, tools, false)).toThrow(
      'the grant for "read_file": the upstream\'s annotations mark this tool read-only or not destructive',
    );
    expect(() => checkGrantsAsked(policy, tools, true)).not.toThrow();
    expect(() =>
      checkGrantsAsked(validatePolicy({ confirm: ['read_*'], grants: { read_file: {} } }), tools, false),
    ).not.toThrow();
    expect(() =>
      checkGrantsAsked(policy, [{ name: 'other', annotations: { readOnlyHint: true } }], false),
    ).not.toThrow();
  });
});

describe('explainDecision: the decision and why', () => {
  const policy = validatePolicy({ deny: ['rm*', 'drop'], confirm: ['rm_safe', 'write*'], allow: ['write_log'] });
  it.each([
    ['rm_safe', undefined, 'deny', { kind: 'policy', list: 'deny', index: 0, glob: 'rm*' }],
    ['drop', undefined, 'deny', { kind: 'policy', list: 'deny', index: 1, glob: 'drop' }],
    ['write_log', { readOnlyHint: true }, 'confirm', { kind: 'policy', list: 'confirm', index: 1, glob: 'write*' }],
    ['read', { readOnlyHint: true }, 'allow', { kind: 'annotation', hint: 'readOnlyHint: true' }],
    ['mkdir', { destructiveHint: false }, 'allow', { kind: 'annotation', hint: 'destructiveHint: false' }],
    ['edit', { destructiveHint: true }, 'confirm', { kind: 'default', annotated: true, destructiveHint: true }],
    ['bare', undefined, 'confirm', { kind: 'default', annotated: false, destructiveHint: undefined }],
    ['odd', { readOnlyHint: 'yes' }, 'confirm', { kind: 'default', annotated: true, destructiveHint: undefined }],
  ] as const)('%s %j: %s, %j, as decide() says', (name, annotations, decision, reason) => {
    expect(explainDecision(policy, name, annotations, false)).toEqual({ decision, reason });
    expect(decide(policy, name, annotations, false)).toBe(decision);
  });

  it('names --confirm-unnamed as the reason for an unnamed tool, never over a policy entry', () => {
    expect(explainDecision(policy, 'read', { readOnlyHint: true }, true)).toEqual({
      decision: 'confirm',
      reason: { kind: 'unnamed' },
    });
    expect(explainDecision(policy, 'drop', undefined, true).reason).toMatchObject({ kind: 'policy', list: 'deny' });
  });
});

import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { decide, globMatches, validatePolicy } from '../../src/proxy/policy.js';

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

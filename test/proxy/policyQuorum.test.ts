/**
 * The proxy policy's `quorum` (issue 19 part 3): how many distinct approvers a tool's calls need,
 * the largest of the matching globs, never below `--approvers-required`.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { largestQuorum, quorumFor, validatePolicy } from '../../src/proxy/policy.js';

describe('policy quorum', () => {
  it('a tool needs the largest quorum of the globs matching it; a tool no glob matches needs the floor; the floor is never lowered', () => {
    const policy = validatePolicy({ quorum: { 'delete_*': 2, 'delete_db*': 3, '*': 1, 'drop_?': 4 } });
    expect(quorumFor(policy, 'delete_file')).toBe(2);
    expect(quorumFor(policy, 'delete_dbs')).toBe(3);
    expect(quorumFor(policy, 'drop_x')).toBe(4);
    expect(quorumFor(policy, 'drop_xy')).toBe(1);
    expect(quorumFor(policy, 'read_file')).toBe(1);
    // The floor (--approvers-required): a glob asking fewer does not lower it.
    expect(quorumFor(policy, 'read_file', 2)).toBe(2);
    expect(quorumFor(policy, 'delete_file', 3)).toBe(3);
    expect(largestQuorum(policy)).toBe(4);
    expect(largestQuorum(policy, 5)).toBe(5);
    // Control: without quorum, every tool needs the floor.
    const none = validatePolicy({ confirm: ['delete_*'] });
    expect(none.quorum).toBeUndefined();
    expect(quorumFor(none, 'delete_file')).toBe(1);
    expect(largestQuorum(none, 2)).toBe(2);
  });

  it('refuses a quorum that is not an object of globs to whole numbers from 1 to 16, naming the entry; control: a valid one is kept in order', () => {
    const refused = (value: unknown): string => {
      try {
        validatePolicy({ quorum: value });
      } catch (e) {
        expect(e).toBeInstanceOf(ConfigError);
        expect((e as ConfigError).code).toBe('ERR_CONFIG_POLICY');
        return (e as Error).message;
      }
      throw new Error('accepted');
    };
    expect(refused([])).toBe('quorum must be an object of tool-name globs to numbers of approvers');
    expect(refused({ 'delete_*': 0 })).toBe('quorum["delete_*"] must be a whole number of approvers from 1 to 16');
    expect(refused({ 'delete_*': 17 })).toBe('quorum["delete_*"] must be a whole number of approvers from 1 to 16');
    expect(refused({ 'delete_*': 1.5 })).toContain('whole number');
    expect(refused({ 'delete_*': '2' })).toContain('whole number');
    expect(refused({ '': 2 })).toBe('quorum[""] is empty');
    expect(refused({ 'a\u0007': 2 })).toContain('control character');
    expect(validatePolicy({ quorum: { b: 2, a: 3 } }).quorum).toEqual([
      ['b', 2],
      ['a', 3],
    ]);
  });

  it('names quorum among the keys of a policy', () => {
    expect(() => validatePolicy({ quorums: {} })).toThrow(
      'unknown key "quorums": the policy has only confirm, allow, deny, grants and quorum',
    );
  });
});

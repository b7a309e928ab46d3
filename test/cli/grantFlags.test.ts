/**
 * The grant and plan flags of serving `delete_file` (src/cli/args.ts): `--grants`,
 * `--grant-max-uses`, `--grant-max-seconds` and `--plans`, parsed into the command's grant policy;
 * each refusal names the flag, each with the fixed command as its control. (The same through the
 * built CLI, exit 2 and the serving line: test/e2e/grantsServe.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { parseCommand, UsageError } from '../../src/cli/args.js';

const serve = (...flags: string[]) => parseCommand(['--root', '/tmp', ...flags]);

describe('--grants, --grant-max-uses, --grant-max-seconds, --plans', () => {
  it('default to no grant and no plans', () => {
    expect(serve()).toMatchObject({ kind: 'serve', grant: undefined, plans: false });
  });

  it('--grants alone takes the default bounds (20 uses, 900 seconds); --plans is independent of it', () => {
    expect(serve('--grants', 'same-directory')).toMatchObject({
      grant: { arguments: { path: 'same-directory' }, maxUses: 20, maxSeconds: 900 },
      plans: false,
    });
    expect(serve('--plans')).toMatchObject({ grant: undefined, plans: true });
    expect(serve('--grants', 'subtree', '--grant-max-uses', '3', '--grant-max-seconds', '60', '--plans')).toMatchObject(
      { grant: { arguments: { path: 'subtree' }, maxUses: 3, maxSeconds: 60 }, plans: true },
    );
  });

  it.each([
    [
      ['--grant-max-uses', '3'],
      '--grant-max-uses needs --grants same-directory|subtree',
      ['--grants', 'subtree', '--grant-max-uses', '3'],
    ],
    [
      ['--grant-max-seconds', '60', '--plans'],
      '--grant-max-seconds needs --grants same-directory|subtree',
      ['--grants', 'subtree', '--grant-max-seconds', '60', '--plans'],
    ],
    [['--grants', 'prefix'], '--grants must be same-directory or subtree, got "prefix"', ['--grants', 'subtree']],
    [['--grants', 'exact'], '--grants must be same-directory or subtree, got "exact"', ['--grants', 'same-directory']],
    [
      ['--grants', 'Same-Directory'],
      '--grants must be same-directory or subtree, got "Same-Directory"',
      ['--grants', 'same-directory'],
    ],
    [['--grants', ''], '--grants must be same-directory or subtree, got ""', ['--grants', 'subtree']],
    [
      ['--grants', 'subtree', '--grant-max-seconds', '0'],
      '--grant-max-seconds must be a whole number of seconds from 1 to 86400 (one day), got 0',
      ['--grants', 'subtree', '--grant-max-seconds', '1'],
    ],
    [
      ['--grants', 'subtree', '--grant-max-seconds', '86401'],
      '--grant-max-seconds must be a whole number of seconds from 1 to 86400 (one day), got 86401',
      ['--grants', 'subtree', '--grant-max-seconds', '86400'],
    ],
    [
      ['--grants', 'subtree', '--grant-max-seconds', '1.5'],
      '--grant-max-seconds must be a whole number of seconds, got "1.5"',
      ['--grants', 'subtree', '--grant-max-seconds', '2'],
    ],
    [
      ['--grants', 'subtree', '--grant-max-uses', '0'],
      '--grant-max-uses must be a whole number from 1 to 1000000, got "0"',
      ['--grants', 'subtree', '--grant-max-uses', '2'],
    ],
    [
      ['--grants', 'subtree', '--grant-max-uses', '1'],
      '--grant-max-uses must be at least 2, got "1" (the approving deletion is a grant\'s first use, so a grant of 1 would allow no other deletion)',
      ['--grants', 'subtree', '--grant-max-uses', '2'],
    ],
    [
      ['--grants', 'subtree', '--grant-max-uses', '1000001'],
      '--grant-max-uses must be a whole number from 1 to 1000000, got "1000001"',
      ['--grants', 'subtree', '--grant-max-uses', '1000000'],
    ],
    // A value starting with a dash goes after "=" (node:util parseArgs takes "-1" after a space for a flag).
    [
      ['--grants', 'subtree', '--grant-max-uses=-1'],
      '--grant-max-uses must be a whole number from 1 to 1000000, got "-1"',
      ['--grants', 'subtree', '--grant-max-uses=2'],
    ],
    [
      ['--grants', 'subtree', '--grant-max-uses', '2e1'],
      '--grant-max-uses must be a whole number from 1 to 1000000, got "2e1"',
      ['--grants', 'subtree', '--grant-max-uses', '20'],
    ],
  ])('%j is refused: %s (control: %j parses)', (flags, message, fixed) => {
    expect(() => serve(...flags)).toThrow(new UsageError(message));
    expect(serve(...fixed)).toMatchObject({ kind: 'serve', grant: { arguments: { path: expect.any(String) } } });
  });
});

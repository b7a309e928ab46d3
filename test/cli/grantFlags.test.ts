/**
 * The grant and plan flags of serving `delete_file` (src/cli/args.ts): `--grants`,
 * `--grant-max-uses`, `--grant-max-seconds` and `--plans`, parsed into the command's grant policy;
 * each refusal names the flag, each with the fixed command as its control. (The same through the
 * built CLI, exit 2 and the serving line: test/e2e/grantsServe.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { parseCommand, UsageError } from '../../src/cli/args.js';

const serve = (...flags: string[]) => parseCommand(['--root', '/tmp', ...flags]);

/** The refusals' fixed sentences, by the value they name. */
const needsGrants = (flag: string) => `${flag} needs --grants same-directory|subtree`;
const mode = (got: string) => `--grants must be same-directory or subtree, got "${got}"`;
const secondsRange = (got: string) =>
  `--grant-max-seconds must be a whole number of seconds from 1 to 86400 (one day), got ${got}`;
const uses = (got: string) => `--grant-max-uses must be a whole number from 1 to 1000000, got "${got}"`;

/** A row of flags refused after `--grants subtree`: the flags, the refusal, and the fixed flags (control). */
const subtree = (flags: string[], message: string, fixed: string[]): [string[], string, string[]] => [
  ['--grants', 'subtree', ...flags],
  message,
  ['--grants', 'subtree', ...fixed],
];

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
    [['--grant-max-uses', '3'], needsGrants('--grant-max-uses'), ['--grants', 'subtree', '--grant-max-uses', '3']],
    [
      ['--grant-max-seconds', '60', '--plans'],
      needsGrants('--grant-max-seconds'),
      ['--grants', 'subtree', '--grant-max-seconds', '60', '--plans'],
    ],
    [['--grants', 'prefix'], mode('prefix'), ['--grants', 'subtree']],
    [['--grants', 'exact'], mode('exact'), ['--grants', 'same-directory']],
    [['--grants', 'Same-Directory'], mode('Same-Directory'), ['--grants', 'same-directory']],
    [['--grants', ''], mode(''), ['--grants', 'subtree']],
    subtree(['--grant-max-seconds', '0'], secondsRange('0'), ['--grant-max-seconds', '1']),
    subtree(['--grant-max-seconds', '86401'], secondsRange('86401'), ['--grant-max-seconds', '86400']),
    subtree(['--grant-max-seconds', '1.5'], '--grant-max-seconds must be a whole number of seconds, got "1.5"', [
      '--grant-max-seconds',
      '2',
    ]),
    subtree(['--grant-max-uses', '0'], uses('0'), ['--grant-max-uses', '2']),
    subtree(
      ['--grant-max-uses', '1'],
      '--grant-max-uses must be at least 2, got "1" (the approving deletion is a grant\'s first use, so a grant of 1 would allow no other deletion)',
      ['--grant-max-uses', '2'],
    ),
    subtree(['--grant-max-uses', '1000001'], uses('1000001'), ['--grant-max-uses', '1000000']),
    // A value starting with a dash goes after "=" (node:util parseArgs takes "-1" after a space for a flag).
    subtree(['--grant-max-uses=-1'], uses('-1'), ['--grant-max-uses=2']),
    subtree(['--grant-max-uses', '2e1'], uses('2e1'), ['--grant-max-uses', '20']),
  ])('%j is refused: %s (control: %j parses)', (flags, message, fixed) => {
    expect(() => serve(...flags)).toThrow(new UsageError(message));
    expect(serve(...fixed)).toMatchObject({ kind: 'serve', grant: { arguments: { path: expect.any(String) } } });
  });
});

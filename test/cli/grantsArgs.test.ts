/**
 * `grants revoke ID` with an id that starts with `-` (src/cli/args.ts, src/cli/grantsArgs.ts): a
 * grant id is 22 base64url characters, and 1 random id in 64 starts with `-`, which `parseArgs`
 * alone reads as options. Such an id is read as the ID, after `--` as anywhere; controls: an id
 * without a dash, and words that are not id-shaped, are parsed as before. The other commands that
 * take a positional (`audit verify FILE`) take one starting with `-` after `--`.
 */
import { describe, expect, it } from 'vitest';
import { parseCommand, UsageError } from '../../src/cli/args.js';

const LEDGER = ['--ledger', 'sqlite:/srv/ledger.sqlite'];
const DASHED = '-Ab3_xYz0-QwErTyUiOpAs';
const DOUBLE = '--b3_xYz0-QwErTyUiOpAs';

describe('grants revoke ID, the ID starting with -', () => {
  it('the id-shaped lengths used here are those of a grant id (22 characters)', () => {
    expect(DASHED).toHaveLength(22);
    expect(DOUBLE).toHaveLength(22);
  });

  it.each([
    ['the ID first', ['grants', 'revoke', DASHED, ...LEDGER]],
    ['the ID last', ['grants', 'revoke', ...LEDGER, DASHED]],
    ['after --', ['grants', 'revoke', ...LEDGER, '--', DASHED]],
    ['after --, the flags before the words', [...LEDGER, 'grants', 'revoke', '--', DASHED]],
    ['flags before the command words', [...LEDGER, 'grants', 'revoke', DASHED]],
  ])('%s: revokes that id', (_, argv) => {
    expect(parseCommand(argv)).toMatchObject({
      kind: 'grants-revoke',
      id: DASHED,
      ledger: 'sqlite:/srv/ledger.sqlite',
    });
  });

  it('an ID starting with -- (two dashes) is read as the ID too, before or after the flags, with --audience and --audit', () => {
    expect(parseCommand(['grants', 'revoke', DOUBLE, ...LEDGER, '--audience', 'files'])).toMatchObject({
      kind: 'grants-revoke',
      id: DOUBLE,
      audience: 'files',
    });
    expect(
      parseCommand(['grants', 'revoke', ...LEDGER, '--audit', '/var/log/t', '--key-file', '/k', DOUBLE]),
    ).toMatchObject({ kind: 'grants-revoke', id: DOUBLE, audit: { prefix: '/var/log/t', keyFile: '/k' } });
  });

  it('control: an id without a dash, and with -- before it, parse as ever', () => {
    const id = 'Ab3_xYz0-QwErTyUiOpAsd';
    expect(parseCommand(['grants', 'revoke', id, ...LEDGER])).toMatchObject({ kind: 'grants-revoke', id });
    expect(parseCommand(['grants', 'revoke', ...LEDGER, '--', id])).toMatchObject({ kind: 'grants-revoke', id });
  });

  it('a dashed word that is the value of the option before it stays that value (refused as ambiguous by parseArgs, as before)', () => {
    expect(() => parseCommand(['grants', 'revoke', 'A'.repeat(22), ...LEDGER, '--audience', DASHED])).toThrow(
      UsageError,
    );
  });

  it('still refuses what is not an id: a short dashed word is an unknown option, a second ID is an unexpected argument', () => {
    expect(() => parseCommand(['grants', 'revoke', '-abc', ...LEDGER])).toThrow(new UsageError('unknown option -a'));
    expect(() => parseCommand(['grants', 'revoke', DASHED, 'A'.repeat(22), ...LEDGER])).toThrow(
      new UsageError(`unexpected argument: ${DASHED}`),
    );
    // Outside grants revoke, an id-shaped dashed word is not moved: it is an unknown option there.
    expect(() => parseCommand(['grants', 'list', DASHED, ...LEDGER])).toThrow(UsageError);
    expect(() => parseCommand(['--root', '/tmp', DASHED])).toThrow(/unknown option -/);
  });

  it('audit verify takes a FILE starting with - after --', () => {
    expect(parseCommand(['audit', 'verify', '--key-file', '/k', '--', '-trail.jsonl'])).toMatchObject({
      kind: 'audit-verify',
      file: '-trail.jsonl',
    });
  });
});

/**
 * The dispatcher of `mcp-confirm` (src/cli/args.ts): one option table per command, so a flag of
 * another command is refused by name; an unknown flag is named as unknown first; `proxy` goes
 * through the same entry.
 */
import { describe, expect, it } from 'vitest';
import { parseCommand, UsageError } from '../../src/cli/args.js';

const refused = (argv: string[]) => () => parseCommand(argv);

describe('one option table per command', () => {
  it.each([
    [['--root', '/tmp', '--yes'], '--yes belongs to the demo command'],
    [['--root', '/tmp', '--kid', 'k1'], '--kid belongs to the keygen command'],
    [['--root', '/tmp', '--name', 'ann'], '--name belongs to approvers enroll'],
    [['--root', '/tmp', '--principal', 'https://issuer.example', 'sub'], '--principal belongs to approvers enroll'],
    [['demo', '--root', '/tmp'], 'demo takes only --yes'],
    [['demo', '--approval', 'passkey'], 'demo takes only --yes'],
    [['demo', '--port', '1'], '--port belongs to approvers enroll'],
    [['keygen', '--root', '/tmp'], 'keygen takes only --kid and --out'],
    [['keygen', '--yes'], 'keygen takes only --kid and --out'],
    [['--root', '/tmp', '--out', 'keys.json'], '--out belongs to the keygen command'],
    [['demo', '--out', 'keys.json'], 'demo takes only --yes'],
    [
      ['audit', 'verify', 'f', '--key-file', 'k', '--http', '127.0.0.1:0'],
      'audit verify takes only --key-file, --ledger and --audience, not --http',
    ],
    [
      ['approvers', 'enroll', '--approvers', 'p', '--name', 'ann', '--ttl', '5'],
      'approvers enroll does not take --ttl',
    ],
    [['approvers', 'list', '--approvers', 'p', '--http', '127.0.0.1:0'], 'approvers list does not take --http'],
    [['approvers', 'list', '--approvers', 'p', '--name', 'ann'], 'approvers list does not take --name'],
    [
      ['approvers', 'remove', '--approvers', 'p', '--name', 'ann', '--timeout', '5'],
      '--port, --timeout, --replace, --public-url and --principal belong to approvers enroll',
    ],
  ])('%j is refused: %s', (argv, message) => {
    expect(refused(argv)).toThrow(new UsageError(message));
  });

  it('control: each command takes its own flags', () => {
    expect(parseCommand(['demo', '--yes'])).toEqual({ kind: 'demo', yes: true });
    expect(parseCommand(['keygen', '--kid', 'k1'])).toEqual({ kind: 'keygen', kid: 'k1', out: undefined });
    expect(parseCommand(['keygen', '--kid', 'k1', '--out', 'keys.json'])).toEqual({
      kind: 'keygen',
      kid: 'k1',
      out: 'keys.json',
    });
    expect(parseCommand(['audit', 'verify', 'f', '--key-file', 'k'])).toMatchObject({
      kind: 'audit-verify',
      file: 'f',
      keyFile: 'k',
      audience: 'mcp-confirm',
    });
    expect(parseCommand(['approvers', 'list', '--approvers', 'p'])).toEqual({ kind: 'approvers-list', approvers: 'p' });
    expect(parseCommand(['approvers', 'remove', '--approvers', 'p', '--name', 'ann'])).toEqual({
      kind: 'approvers-remove',
      approvers: 'p',
      name: 'ann',
    });
    expect(
      parseCommand([
        'approvers',
        'enroll',
        '--approvers',
        'p',
        '--name',
        'ann',
        '--principal',
        'https://issuer.example',
        'sub',
      ]),
    ).toMatchObject({
      kind: 'approvers-enroll',
      principals: ['["jwt","https://issuer.example","sub"]'],
    });
    expect(parseCommand(['--root', '/tmp', '--ttl', '60'])).toMatchObject({
      kind: 'serve',
      roots: ['/tmp'],
      ttlSeconds: 60,
      ledger: 'memory',
      approval: { approval: 'form' },
    });
  });

  it('an unknown flag is named as unknown, before a flag of another command', () => {
    expect(refused(['demo', '--root', '/tmp', '--frobnicate'])).toThrow(new UsageError('unknown option --frobnicate'));
    // Control: without the unknown one, the flag of another command is named.
    expect(refused(['demo', '--root', '/tmp'])).toThrow(new UsageError('demo takes only --yes'));
  });

  it('--help and --version are answered whatever else is given', () => {
    expect(parseCommand(['demo', '--root', '/tmp', '--help'])).toEqual({ kind: 'help' });
    expect(parseCommand(['approvers', 'list', '--version'])).toEqual({ kind: 'version' });
  });

  it('names unknown commands and words', () => {
    expect(refused(['frob'])).toThrow(new UsageError('unknown command: frob'));
    expect(refused(['constructor'])).toThrow(new UsageError('unknown command: constructor'));
    expect(refused(['demo', 'now'])).toThrow(new UsageError('unexpected argument: now'));
    expect(refused(['audit'])).toThrow(new UsageError('audit needs a command: audit verify FILE --key-file PATH'));
    expect(refused(['audit', 'check'])).toThrow(new UsageError('unknown audit command: check'));
    expect(refused(['approvers', 'wipe', '--approvers', 'p'])).toThrow(
      new UsageError('approvers takes enroll, list or remove'),
    );
  });

  it('proxy goes through the same entry, with its own table and messages', () => {
    expect(parseCommand(['proxy', '--ttl', '60', 'node', 'server.js'])).toMatchObject({
      kind: 'proxy',
      ttlSeconds: 60,
      upstream: { kind: 'command', command: ['node', 'server.js'] },
    });
    expect(refused(['proxy', '--root', '/tmp', 'node', 'server.js'])).toThrow(
      new UsageError('proxy: unknown option --root'),
    );
  });
});

/** `--audience` and `--ttl`: one check shared by `mcp-confirm` and `mcp-confirm proxy`, same messages. */
import { describe, expect, it } from 'vitest';
import { parseCommand, UsageError } from '../../src/cli/args.js';
import { parseProxyCommand, splitUpstreamCommand } from '../../src/cli/proxyArgs.js';

const serve = (flags: string[]) => () => parseCommand(['--root', '/tmp', ...flags]);
const proxy = (flags: string[]) => () => parseProxyCommand([...flags, '--', 'node', 'x.js']);

describe('shared --ttl and --audience checks', () => {
  it.each([
    [['--ttl', '1.5'], '--ttl must be a whole number of seconds, got "1.5"'],
    [['--ttl', '0'], '--ttl must be a whole number of seconds from 1 to 86400 (one day), got 0'],
    [['--ttl', '86401'], '--ttl must be a whole number of seconds from 1 to 86400 (one day), got 86401'],
    [
      ['--audience', ''],
      '--audience must be 1 to 200 characters, without { } or control characters (it also namespaces a Redis ledger)',
    ],
    [
      ['--audience', 'a{b}'],
      '--audience must be 1 to 200 characters, without { } or control characters (it also namespaces a Redis ledger)',
    ],
    [
      ['--audience', 'a\u0007'],
      '--audience must be 1 to 200 characters, without { } or control characters (it also namespaces a Redis ledger)',
    ],
  ])('%j is refused with the same message by both commands', (flags, message) => {
    expect(serve(flags)).toThrow(new UsageError(message));
    expect(proxy(flags)).toThrow(new UsageError(message));
  });

  it('control: good values and the defaults are accepted by both', () => {
    expect(serve(['--ttl', '86400', '--audience', 'team-a'])()).toMatchObject({
      ttlSeconds: 86_400,
      audience: 'team-a',
    });
    expect(proxy(['--ttl', '86400', '--audience', 'team-a'])()).toMatchObject({
      ttlSeconds: 86_400,
      audience: 'team-a',
    });
    expect(serve([])()).toMatchObject({ ttlSeconds: 300, audience: 'mcp-confirm' });
    expect(proxy([])()).toMatchObject({ ttlSeconds: 300, audience: 'mcp-confirm' });
  });

  it('--upstream-timeout uses the same whole-seconds check', () => {
    expect(proxy(['--upstream-timeout', '0'])).toThrow(
      new UsageError('--upstream-timeout must be a whole number of seconds from 1 to 86400 (one day), got 0'),
    );
  });
});

describe('the upstream command, with or without --', () => {
  const FS = ['npx', '-y', '@modelcontextprotocol/server-filesystem', '/home/me'];

  it("everything after the proxy's own options is the upstream command, as npx reads it (a host that drops --)", () => {
    expect(parseProxyCommand(['--ttl', '60', '--confirm-unnamed', ...FS])).toMatchObject({
      ttlSeconds: 60,
      confirmUnnamed: true,
      upstream: { kind: 'command', command: FS },
    });
    expect(parseProxyCommand(FS)).toMatchObject({ upstream: { kind: 'command', command: FS } });
  });

  it('control: with -- the same command is parsed the same', () => {
    expect(parseProxyCommand(['--ttl', '60', '--confirm-unnamed', '--', ...FS])).toMatchObject({
      ttlSeconds: 60,
      confirmUnnamed: true,
      upstream: { kind: 'command', command: FS },
    });
  });

  it('an argument after the command that looks like a proxy option goes to the upstream, not to the proxy', () => {
    const parsed = parseProxyCommand(['--ttl', '60', 'node', 'server.js', '--ttl', '5', '--', '-x']);
    expect(parsed.ttlSeconds).toBe(60);
    expect(parsed.upstream).toEqual({ kind: 'command', command: ['node', 'server.js', '--ttl', '5', '--', '-x'] });
  });

  it('the value of a string option is not the command: --policy p.json node x.js', () => {
    const { own, command, dash } = splitUpstreamCommand(['--policy', 'p.json', '--audience=team', 'node', 'x.js']);
    expect({ own, command, dash }).toEqual({
      own: ['--policy', 'p.json', '--audience=team'],
      command: ['node', 'x.js'],
      dash: false,
    });
  });

  it('an unknown option before the command is refused by name, not taken for the command', () => {
    expect(() => parseProxyCommand(['--tll', '5', 'node', 'x.js'])).toThrow(
      new UsageError('proxy: unknown option --tll'),
    );
  });

  it('a command that itself starts with - needs --: without it, it is read as an option', () => {
    expect(() => parseProxyCommand(['-weird-cmd'])).toThrow(UsageError);
    expect(parseProxyCommand(['--', '-weird-cmd', 'a']).upstream).toEqual({
      kind: 'command',
      command: ['-weird-cmd', 'a'],
    });
  });
});

describe('--plans', () => {
  const FS = ['npx', '-y', '@modelcontextprotocol/server-filesystem', '/home/me'];

  it("--plans before the command turns plans on; without it they are off (control); after the command it is the upstream's", () => {
    expect(parseProxyCommand(['--plans', ...FS])).toMatchObject({ plans: true, upstream: { command: FS } });
    expect(parseProxyCommand(FS).plans).toBe(false);
    const after = parseProxyCommand([...FS, '--plans']);
    expect(after.plans).toBe(false);
    expect(after.upstream).toEqual({ kind: 'command', command: [...FS, '--plans'] });
    expect(after.notes).toEqual([
      'note: --plans after the upstream command is passed to the upstream, not read by the proxy; give it before the command',
    ]);
  });
});

describe('--list-max-age', () => {
  it('defaults to 0 (a list per decision); 0 and 3600 are accepted; after the command it is the upstream’s', () => {
    expect(proxy([])().listMaxAgeSeconds).toBe(0);
    expect(proxy(['--list-max-age', '0'])().listMaxAgeSeconds).toBe(0);
    expect(proxy(['--list-max-age', '3600'])().listMaxAgeSeconds).toBe(3600);
    const after = parseProxyCommand(['node', 'x.js', '--list-max-age', '5']);
    expect(after.listMaxAgeSeconds).toBe(0);
    expect(after.upstream).toEqual({ kind: 'command', command: ['node', 'x.js', '--list-max-age', '5'] });
  });

  it.each([['3601'], ['1.5'], ['-1'], ['1e3'], [' 5'], ['']])(
    '%j is refused naming the flag and the bound',
    (value) => {
      expect(proxy([`--list-max-age=${value}`])).toThrow(
        new UsageError(
          `--list-max-age must be a whole number of seconds from 0 to 3600 (one hour), got ${JSON.stringify(value)}`,
        ),
      );
    },
  );
});

/** `--audience` and `--ttl`: one check shared by `mcp-confirm` and `mcp-confirm proxy`, same messages. */
import { describe, expect, it } from 'vitest';
import { parseCommand, UsageError } from '../../src/cli/args.js';
import { parseProxyCommand } from '../../src/cli/proxy.js';

const serve = (flags: string[]) => () => parseCommand(['--root', '/tmp', ...flags]);
const proxy = (flags: string[]) => () => parseProxyCommand([...flags, '--', 'node', 'x.js']);

describe('shared --ttl and --audience checks', () => {
  it.each([
    [['--ttl', '1.5'], '--ttl must be a whole number of seconds, got "1.5"'],
    [['--ttl', '0'], '--ttl must be a whole number of seconds from 1 to 86400 (one day), got 0'],
    [['--ttl', '86401'], '--ttl must be a whole number of seconds from 1 to 86400 (one day), got 86401'],
    [['--audience', ''], '--audience must be 1 to 200 characters, without { } or control characters (it also namespaces a Redis ledger)'],
    [['--audience', 'a{b}'], '--audience must be 1 to 200 characters, without { } or control characters (it also namespaces a Redis ledger)'],
    [['--audience', 'a\u0007'], '--audience must be 1 to 200 characters, without { } or control characters (it also namespaces a Redis ledger)'],
  ])('%j is refused with the same message by both commands', (flags, message) => {
    expect(serve(flags)).toThrow(new UsageError(message));
    expect(proxy(flags)).toThrow(new UsageError(message));
  });

  it('control: good values and the defaults are accepted by both', () => {
    expect(serve(['--ttl', '86400', '--audience', 'team-a'])()).toMatchObject({ ttlSeconds: 86_400, audience: 'team-a' });
    expect(proxy(['--ttl', '86400', '--audience', 'team-a'])()).toMatchObject({ ttlSeconds: 86_400, audience: 'team-a' });
    expect(serve([])()).toMatchObject({ ttlSeconds: 300, audience: 'mcp-confirm' });
    expect(proxy([])()).toMatchObject({ ttlSeconds: 300, audience: 'mcp-confirm' });
  });

  it('--upstream-timeout uses the same whole-seconds check', () => {
    expect(proxy(['--upstream-timeout', '0'])).toThrow(new UsageError('--upstream-timeout must be a whole number of seconds from 1 to 86400 (one day), got 0'));
  });
});

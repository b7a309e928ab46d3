/**
 * Command-line arguments of `mcp-confirm`, parsed with `node:util` `parseArgs`.
 *
 * @module
 */
import { parseArgs } from 'node:util';
import { checkAudience, UsageError, wholeSeconds } from './common.js';
import { HTTP_OPTIONS, HTTP_USAGE, parseHttpSpec, type HttpSpec } from './httpArgs.js';

export { UsageError };

/** Exit code for a usage or start-up configuration error. */
export const EXIT_USAGE = 2;

export const USAGE = `Usage:
  mcp-confirm --root DIR [--root DIR ...] [--audience NAME] [--ttl SECONDS]
              [--key-file PATH] [--ledger memory|sqlite:PATH|redis://HOST:PORT[/DB]]
      Serve the confirmed delete_file tool over stdio (MCP 2026-07-28 and 2025-11-25).
  mcp-confirm demo [--yes]
      Run the demo: a real server and client, a confirmed deletion, three refused attacks.
  mcp-confirm proxy [OPTIONS] -- COMMAND [ARG ...]
      Put the confirmation in front of another MCP server (mcp-confirm proxy --help).
  mcp-confirm keygen [--kid ID]
      Print a new key file ({"keys":[{"kid","k"}]}) with 32 random bytes to stdout.

Options:
  --root DIR        A directory the server may delete files in (repeatable; the first is the
                    base of relative paths). Must exist, be a directory, not be a symbolic link.
  --audience NAME   The audience sealed in every requestState (1-200 characters, no { } or
                    control characters). Default: mcp-confirm.
  --ttl SECONDS     How long a question stays answerable, in whole seconds (1 to 86400). Default: 300.
  --key-file PATH   Key ring shared by replicas: {"keys":[{"kid":"k2","k":"<base64url 32 bytes>"}]};
                    the first key seals, every key opens. Default: one random key per process.
  --ledger SPEC     Where outstanding confirmations live: memory (default, one process),
                    sqlite:PATH (processes on one host), redis://HOST:PORT[/DB] (several hosts).
  --yes             (demo) Answer the confirmation with yes without asking.
  --version         Print the package version and exit.
  -h, --help        Show this help.

${HTTP_USAGE}`;

/** What the command line asks for. */
export type Command =
  | { kind: 'help' }
  | { kind: 'version' }
  | { kind: 'demo'; yes: boolean }
  | { kind: 'keygen'; kid: string }
  | {
      kind: 'serve';
      roots: string[];
      audience: string;
      ttlSeconds: number;
      keyFile: string | undefined;
      ledger: string;
      /** Serve Streamable HTTP instead of stdio (undefined: stdio). */
      http: HttpSpec | undefined;
    };

/**
 * Parses `argv` (without the node and script paths).
 *
 * @throws {UsageError} on unknown options, missing `--root`, or a bad `--ttl`.
 */
export function parseCommand(argv: readonly string[]): Command {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        root: { type: 'string', multiple: true },
        audience: { type: 'string' },
        ttl: { type: 'string' },
        'key-file': { type: 'string' },
        ledger: { type: 'string' },
        yes: { type: 'boolean' },
        kid: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean' },
        ...HTTP_OPTIONS,
      },
    });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) return { kind: 'help' };
  if (values.version) return { kind: 'version' };
  const [sub, ...rest] = positionals;
  if (rest.length > 0) throw new UsageError(`unexpected argument: ${rest[0]}`);
  if (sub === 'demo') {
    if (values.root || values.audience || values.ttl || values['key-file'] || values.ledger || values.kid || values.http) {
      throw new UsageError('demo takes only --yes');
    }
    return { kind: 'demo', yes: values.yes ?? false };
  }
  if (sub === 'keygen') {
    const kid = values.kid ?? `k${new Date().toISOString().slice(0, 10).replaceAll('-', '')}`;
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(kid)) throw new UsageError(`--kid must be 1-64 characters of A-Z a-z 0-9 . _ -, got ${JSON.stringify(kid)}`);
    return { kind: 'keygen', kid };
  }
  if (sub !== undefined) throw new UsageError(`unknown command: ${sub}`);
  if (values.yes) throw new UsageError('--yes belongs to the demo command');
  const roots = values.root ?? [];
  if (roots.length === 0) throw new UsageError('at least one --root DIR is required');
  const ttlSeconds = values.ttl === undefined ? 300 : wholeSeconds('--ttl', values.ttl);
  const audience = checkAudience(values.audience);
  let http: HttpSpec | undefined;
  try {
    http = parseHttpSpec(values);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  return { kind: 'serve', roots, audience, ttlSeconds, keyFile: values['key-file'], ledger: values.ledger ?? 'memory', http };
}

/**
 * Command-line arguments of `mcp-confirm`, parsed with `node:util` `parseArgs`.
 *
 * @module
 */
import { DEFAULT_ENROLL_TIMEOUT_SECONDS, DEFAULT_TTL_SECONDS } from '../defaults.js';
import { parseArgs } from 'node:util';
import { checkAudience, parseArgsUsageError, UsageError, wholeSeconds } from './common.js';
import { HTTP_OPTIONS, HTTP_USAGE, type HttpSpec } from './httpArgs.js';
import { jwtPrincipalFor } from '../principals.js';
import { APPROVAL_OPTIONS, checkedPublicUrl, parseServingFlags, wholeNumber, type ApprovalFlags } from './approvalArgs.js';
import { AUDIT_OPTIONS, AUDIT_USAGE, parseAuditCommand, type AuditVerifyCommand } from './auditArgs.js';

export { UsageError };

/** Exit code for a usage or start-up configuration error. */
export const EXIT_USAGE = 2;

export const USAGE = `Usage:
  mcp-confirm --root DIR [--root DIR ...] [--audience NAME] [--ttl SECONDS]
              [--key-file PATH] [--ledger memory|sqlite:PATH|redis://HOST:PORT[/DB]]
              [--approval form|passkey] [--approvers PATH] [--approval-port PORT]
              [--approval-wait SECONDS]
      Serve the confirmed delete_file tool over stdio (MCP 2026-07-28 and 2025-11-25).
  mcp-confirm --root DIR ... --http HOST:PORT [HTTP options] --approval passkey --approvers PATH
              --public-url URL [--approval-wait SECONDS]
      The same over Streamable HTTP, the approval page on the same listener at URL/approve/….
  mcp-confirm approvers enroll --approvers PATH --name NAME [--port PORT] [--timeout SECONDS] [--replace]
              [--public-url URL] [--principal ISS SUB ...]
      Enrol a passkey: prints the enrolment page's URL (with a one-time secret) as the first line.
  mcp-confirm approvers list --approvers PATH
  mcp-confirm approvers remove --approvers PATH --name NAME
  mcp-confirm demo [--yes]
      Run the demo: a real server and client, a confirmed deletion, three refused attacks.
  mcp-confirm proxy [OPTIONS] [--] COMMAND [ARG ...]
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
  --approval MODE   form (default: the client's yes is taken as given) or passkey (the human
                    approves on a local page with an enrolled passkey; needs --approvers).
  --approvers PATH  The approvers file (mcp-confirm approvers enroll). Mode 0600, outside every root.
  --approval-port PORT  (stdio) The approval page's port on 127.0.0.1 and ::1. Default: a random free port.
  --public-url URL  (--http with --approval passkey; approvers enroll) The origin browsers use for the
                    approval page (https://mcp.example.com): the WebAuthn origin; its host name is the
                    RP ID, and must be an allowed host (--resource's, --allowed-hosts or the bind's).
  --principal ISS SUB  (approvers enroll, repeatable) A token issuer and subject the approver may
                    approve for over --http with --auth-issuer. Default: local (stdio, or --http without tokens).
  --approval-wait SECONDS  How long a retry waits for the page's decision (0 to 3600). Default: 45
                           (below the 60 s request timeout of the MCP SDKs' clients).
  --yes             (demo) Answer the confirmation with yes without asking.
  --version         Print the package version and exit.
  -h, --help        Show this help.

${HTTP_USAGE}

${AUDIT_USAGE}`;

/** What the command line asks for. */
export type Command =
  | { kind: 'help' }
  | { kind: 'version' }
  | { kind: 'demo'; yes: boolean }
  | { kind: 'keygen'; kid: string }
  | AuditVerifyCommand
  | {
      kind: 'approvers-enroll';
      approvers: string;
      name: string;
      /** 0: a random free port (stdio), or the public URL's port. */
      port: number | undefined;
      timeoutSeconds: number;
      replace: boolean;
      /** `--public-url`: the origin and RP ID of the server the approver is for (undefined: localhost). */
      publicUrl: URL | undefined;
      /** The principal strings the approver may approve for (`local` without `--principal`). */
      principals: string[];
    }
  | { kind: 'approvers-list'; approvers: string }
  | { kind: 'approvers-remove'; approvers: string; name: string }
  | ({
      kind: 'serve';
      roots: string[];
      audience: string;
      ttlSeconds: number;
      keyFile: string | undefined;
      ledger: string;
      /** Serve Streamable HTTP instead of stdio (undefined: stdio). */
      http: HttpSpec | undefined;
      /** `--audit PATH`: the audit trail's path prefix (undefined: no trail). */
      audit: string | undefined;
    } & ApprovalFlags);

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
        ...AUDIT_OPTIONS,
        ...APPROVAL_OPTIONS,
        principal: { type: 'string', multiple: true },
        name: { type: 'string' },
        port: { type: 'string' },
        timeout: { type: 'string' },
        replace: { type: 'boolean' },
      },
      tokens: true,
    });
  } catch (e) {
    throw parseArgsUsageError(e);
  }
  const { values, tokens } = parsed;
  // `--principal ISS SUB` takes two values: parseArgs gives ISS as the option's value; SUB is the
  // positional right after it.
  const principalPairs: Array<[string, string]> = [];
  const consumed = new Set<number>();
  for (const t of tokens) {
    if (t.kind !== 'option' || t.name !== 'principal') continue;
    const subIndex = t.inlineValue ? t.index + 1 : t.index + 2;
    const sub = tokens.find((u) => u.kind === 'positional' && u.index === subIndex);
    if (sub === undefined || sub.kind !== 'positional' || t.value === undefined) throw new UsageError('--principal takes two values: the token issuer and subject (--principal ISS SUB)');
    consumed.add(subIndex);
    principalPairs.push([t.value, sub.value]);
  }
  const positionals = tokens.filter((t) => t.kind === 'positional' && !consumed.has(t.index)).map((t) => (t as { value: string }).value);
  if (values.help) return { kind: 'help' };
  if (values.version) return { kind: 'version' };
  const [sub, ...rest] = positionals;
  if (sub === 'audit') {
    try {
      return parseAuditCommand(rest, values);
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
  }
  const serveOnly = ['approval', 'approval-port', 'approval-wait'] as const;
  const approversOnly = ['name', 'port', 'timeout', 'replace', 'principal'] as const;
  if (sub === 'approvers') {
    const [action, ...extra] = rest;
    if (extra.length > 0) throw new UsageError(`unexpected argument: ${extra[0]}`);
    for (const k of ['root', 'audience', 'ttl', 'key-file', 'ledger', 'yes', 'kid', ...serveOnly] as const) {
      if (values[k] !== undefined) throw new UsageError(`approvers ${action ?? ''} does not take --${k}`);
    }
    const approvers = values.approvers;
    if (approvers === undefined || approvers === '') throw new UsageError('approvers needs --approvers PATH');
    if (action === 'enroll') {
      if (values.name === undefined) throw new UsageError('approvers enroll needs --name NAME');
      const principals = principalPairs.map(([iss, sub]) => {
        let url: URL | undefined;
        try {
          url = new URL(iss);
        } catch {
          url = undefined;
        }
        if (url === undefined || (url.protocol !== 'https:' && url.protocol !== 'http:')) {
          throw new UsageError(`--principal ISS SUB: ISS is the token issuer, an http(s) URL equal to the server's --auth-issuer, got ${JSON.stringify(iss)}`);
        }
        if (sub === '' || !sub.isWellFormed()) throw new UsageError('--principal ISS SUB: SUB is the token subject, a non-empty string');
        return jwtPrincipalFor(iss, sub);
      });
      return {
        kind: 'approvers-enroll',
        approvers,
        name: values.name,
        port: values.port === undefined ? undefined : wholeNumber('--port', values.port, 1, 65_535),
        timeoutSeconds: values.timeout === undefined ? DEFAULT_ENROLL_TIMEOUT_SECONDS : wholeNumber('--timeout', values.timeout, 1, 86_400),
        replace: values.replace ?? false,
        publicUrl: values['public-url'] === undefined ? undefined : checkedPublicUrl(values['public-url']),
        principals: principals.length > 0 ? [...new Set(principals)] : ['local'],
      };
    }
    if (values.port !== undefined || values.timeout !== undefined || values.replace !== undefined || values.principal !== undefined || values['public-url'] !== undefined) {
      throw new UsageError('--port, --timeout, --replace, --public-url and --principal belong to approvers enroll');
    }
    if (action === 'list') {
      if (values.name !== undefined) throw new UsageError('approvers list does not take --name');
      return { kind: 'approvers-list', approvers };
    }
    if (action === 'remove') {
      if (values.name === undefined) throw new UsageError('approvers remove needs --name NAME');
      return { kind: 'approvers-remove', approvers, name: values.name };
    }
    throw new UsageError('approvers takes enroll, list or remove');
  }
  for (const k of approversOnly) if (values[k] !== undefined) throw new UsageError(`--${k} belongs to approvers enroll`);
  if (rest.length > 0) throw new UsageError(`unexpected argument: ${rest[0]}`);
  if (sub === 'demo') {
    if (values.root || values.audience || values.ttl || values['key-file'] || values.ledger || values.kid || values.http || values.audit) {
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
  const ttlSeconds = values.ttl === undefined ? DEFAULT_TTL_SECONDS : wholeSeconds('--ttl', values.ttl);
  const audience = checkAudience(values.audience);
  const { http, audit, approval } = parseServingFlags(values);
  return {
    kind: 'serve',
    roots,
    audience,
    ttlSeconds,
    keyFile: values['key-file'],
    ledger: values.ledger ?? 'memory',
    http,
    audit,
    ...approval,
  };
}

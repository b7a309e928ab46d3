/**
 * `mcp-confirm proxy [options] -- COMMAND [ARG…]`: the confirmation proxy over stdio.
 * Spawns COMMAND as the upstream MCP server and serves the client on this process's stdio;
 * stdout carries only the protocol, diagnostics go to stderr.
 *
 * @module
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { createConfirmation, type ConfirmEvent } from '../guard/confirmation.js';
import { renderValue } from '../prompt/render.js';
import { EMPTY_POLICY, parsePolicy, PolicyError, type Policy } from '../proxy/policy.js';
import { createProxy } from '../proxy/server.js';
import { Upstream } from '../proxy/upstream.js';
import { checkAudience, readKeyFile, UsageError, wholeSeconds } from './common.js';
import { openLedger } from './ledgerSpec.js';

export const PROXY_USAGE = `Usage:
  mcp-confirm proxy [--policy PATH] [--confirm-unnamed] [--audience NAME] [--ttl SECONDS]
                    [--key-file PATH] [--ledger SPEC] [--upstream-timeout SECONDS]
                    -- COMMAND [ARG ...]
      Start COMMAND as the upstream MCP server (stdio) and serve it to the client over stdio
      (MCP 2026-07-28 and 2025-11-25), asking a human before each call of a tool that needs it.

Options:
  --policy PATH             JSON {"confirm":[GLOB...],"allow":[GLOB...],"deny":[GLOB...]}: tool-name
                            globs (* and ? only, whole name, case-sensitive); deny > confirm > allow.
                            Unnamed tools are asked unless readOnlyHint is true or destructiveHint false.
  --confirm-unnamed         Ask for every tool the policy does not name, whatever its annotations.
  --upstream-timeout SECONDS
                            Deadline of one upstream request (1 to 86400). Default: 120.
  --audience, --ttl, --key-file, --ledger   As for serving delete_file (mcp-confirm --help).`;

/** What `mcp-confirm proxy …` asks for. */
export interface ProxyCommand {
  help: boolean;
  policyPath: string | undefined;
  confirmUnnamed: boolean;
  audience: string;
  ttlSeconds: number;
  keyFile: string | undefined;
  ledger: string;
  upstreamTimeoutSeconds: number;
  command: string[];
}

/**
 * Parses the arguments after `proxy`.
 *
 * @throws {UsageError} on unknown options, a missing `--` or command, a bad `--ttl`, `--audience` or `--upstream-timeout`.
 */
export function parseProxyCommand(argv: readonly string[]): ProxyCommand {
  const dash = argv.indexOf('--');
  const own = dash < 0 ? [...argv] : argv.slice(0, dash);
  const command = dash < 0 ? [] : argv.slice(dash + 1);
  let values;
  try {
    ({ values } = parseArgs({
      args: own,
      allowPositionals: false,
      strict: true,
      options: {
        policy: { type: 'string' },
        'confirm-unnamed': { type: 'boolean' },
        audience: { type: 'string' },
        ttl: { type: 'string' },
        'key-file': { type: 'string' },
        ledger: { type: 'string' },
        'upstream-timeout': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (e) {
    throw new UsageError(`proxy: ${(e as Error).message}`);
  }
  const help = values.help ?? false;
  if (!help && command.length === 0) throw new UsageError('proxy: give the upstream command after --, e.g. mcp-confirm proxy -- npx -y @modelcontextprotocol/server-filesystem /home/me/projects');
  if (!help && command[0] === '') throw new UsageError('proxy: the upstream command is empty');
  const audience = checkAudience(values.audience);
  return {
    help,
    policyPath: values.policy,
    confirmUnnamed: values['confirm-unnamed'] ?? false,
    audience,
    ttlSeconds: values.ttl === undefined ? 300 : wholeSeconds('--ttl', values.ttl),
    keyFile: values['key-file'],
    ledger: values.ledger ?? 'memory',
    upstreamTimeoutSeconds: values['upstream-timeout'] === undefined ? 120 : wholeSeconds('--upstream-timeout', values['upstream-timeout']),
    command,
  };
}

/**
 * Reads and validates the policy file.
 *
 * @throws {UsageError} naming the file and the bad entry.
 */
export async function loadPolicy(path: string | undefined): Promise<Policy> {
  if (path === undefined) return EMPTY_POLICY;
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    throw new UsageError(`--policy ${path}: cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  try {
    return parsePolicy(text);
  } catch (e) {
    if (e instanceof PolicyError) throw new UsageError(`--policy ${path}: ${e.message}`);
    throw e;
  }
}

function log(line: string): void {
  process.stderr.write(`mcp-confirm proxy: ${line}\n`);
}

/** Tool names in diagnostics are untrusted text: rendered like the question's. */
function logEvent(event: ConfirmEvent): void {
  const tool = 'tool' in event ? renderValue(event.tool) : '';
  switch (event.type) {
    case 'asked':
      return log(`asked to confirm ${tool}`);
    case 'asked-again':
      return log(`asked again for ${tool} (${event.reason})`);
    case 'refused':
      return log(`refused ${tool}: ${event.code}`);
    case 'state-refused':
      return log(`requestState refused (${event.reason})`);
    case 'not-confirmed':
      return log(`${tool} not confirmed (${event.action})`);
    case 'confirmed':
      return log(`${tool} confirmed and forwarded`);
    case 'internal-error':
      return log(`internal error in ${tool}: ${event.error instanceof Error ? event.error.message : String(event.error)}`);
  }
}

/**
 * Runs the proxy until the client disconnects.
 *
 * @returns an exit code, or -1 to keep running.
 * @throws {UsageError} on bad options, policy, key file or ledger (exit 2).
 */
export async function runProxy(argv: readonly string[]): Promise<number> {
  const command = parseProxyCommand(argv);
  if (command.help) {
    process.stdout.write(`${PROXY_USAGE}\n`);
    return 0;
  }
  const policy = await loadPolicy(command.policyPath);
  const keys = await readKeyFile(command.keyFile);
  const ledger = await openLedger(command.ledger, command.audience, log);
  const confirmation = await createConfirmation({
    audience: command.audience,
    ttlSeconds: command.ttlSeconds,
    ledger,
    onEvent: logEvent,
    ...(keys ? { keys } : {}),
  });
  let upstream: Upstream;
  try {
    upstream = await Upstream.spawn({ command: command.command, callTimeoutMs: command.upstreamTimeoutSeconds * 1000, log });
  } catch (e) {
    await ledger.close?.().catch(() => {});
    log((e as Error).message);
    return 1;
  }
  upstream.onDown((reason) => log(`the upstream server is down (${reason}); it is not restarted: every call now answers ERR_CONFIRM_UPSTREAM_DOWN`));
  const { factory } = createProxy({ confirmation, upstream, policy, confirmUnnamed: command.confirmUnnamed });
  const handle = serveStdio(factory, { onerror: (error) => log(error.message) });
  const stop = async (): Promise<void> => {
    await handle.close().catch(() => {});
    await upstream.close();
    await ledger.close?.().catch(() => {});
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
  process.stdin.once('end', () => void stop());
  log(
    `serving ${renderValue(upstream.identity.name)} ${renderValue(upstream.identity.version)} over stdio; policy: ${policy.confirm.length} confirm, ${policy.allow.length} allow, ${policy.deny.length} deny${command.confirmUnnamed ? ', unnamed tools asked' : ''}; audience ${JSON.stringify(command.audience)}; ttl ${command.ttlSeconds}s; ledger ${ledger.kind}`,
  );
  return -1;
}

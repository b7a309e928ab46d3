/**
 * `mcp-confirm proxy [options] ([--] COMMAND [ARG…] | --upstream-url URL)`: the confirmation proxy.
 * Spawns COMMAND as the upstream MCP server (or connects to a Streamable HTTP upstream) and
 * serves the client on this process's stdio (stdout carries only the protocol, diagnostics go to
 * stderr) or, with `--http`, over Streamable HTTP with the main server's rules. Its command line is
 * `proxyArgs.ts`; keys, store, audit trail, approval page, events and running until stopped are the
 * runtime's (`runtime.ts`), as for serving `delete_file`.
 *
 * @module
 */
import { readFile } from 'node:fs/promises';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { createConfirmation } from '../guard/confirmation.js';
import { renderValue } from '../prompt/render.js';
import { EMPTY_POLICY, parsePolicy, type Policy } from '../proxy/policy.js';
import { createProxy } from '../proxy/server.js';
import { shownUrl, Upstream } from '../proxy/upstream.js';
import { asUsageError, UsageError } from './common.js';
import type { ProxyCommand } from './proxyArgs.js';
import { eventLogger, openRuntime } from './runtime.js';

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
    throw new UsageError(
      `--policy ${path}: cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
    );
  }
  try {
    return parsePolicy(text);
  } catch (e) {
    throw asUsageError(e, `--policy ${path}: `);
  }
}

function log(line: string): void {
  process.stderr.write(`mcp-confirm proxy: ${line}\n`);
}

/**
 * Runs the proxy until the client disconnects.
 *
 * @returns an exit code (1 when the upstream cannot be started or reached), or -1 to keep running.
 * @throws {UsageError} on a bad policy, key file, store, audit trail or approval page (exit 2).
 */
export async function runProxy(command: ProxyCommand): Promise<number> {
  for (const note of command.notes) log(note);
  const policy = await loadPolicy(command.policyPath);
  // Tool and approver names in diagnostics are untrusted text: rendered like the question's.
  const runtime = await openRuntime(command, { log, events: eventLogger(log, 'forwarded', renderValue) });
  const { approval } = runtime;
  const confirmation = await createConfirmation(await runtime.confirmationOptions());
  const timing = {
    callTimeoutMs: command.upstreamTimeoutSeconds * 1000,
    log,
    roots: command.http === undefined,
    ...(command.upstreamId !== undefined ? { id: command.upstreamId } : {}),
  };
  let upstream: Upstream;
  try {
    upstream =
      command.upstream.kind === 'url'
        ? await Upstream.connectHttp({ url: command.upstream.url, headers: command.upstream.headers, ...timing })
        : await Upstream.spawn({ command: command.upstream.command, ...timing });
  } catch (e) {
    await runtime.close();
    log((e as Error).message);
    return 1;
  }
  if (
    command.upstream.kind === 'url' &&
    command.upstream.url.protocol === 'http:' &&
    !isLoopbackHost(command.upstream.url.hostname) &&
    command.upstream.headers.length > 0
  ) {
    log(
      `warning: --upstream-header values go to ${shownUrl(command.upstream.url)} over plain http, readable on the network; use https`,
    );
  }
  upstream.onDown((reason) =>
    log(
      `the upstream server is down (${reason}); it is not restarted: every call now answers ERR_CONFIRM_UPSTREAM_DOWN`,
    ),
  );
  const { factory } = createProxy({
    confirmation,
    upstream,
    policy,
    confirmUnnamed: command.confirmUnnamed,
    shared: command.http !== undefined,
    maxArgumentBytes: command.maxArgumentBytes,
  });
  const where = `${command.upstream.kind === 'url' ? `at ${shownUrl(command.upstream.url)}` : 'spawned over stdio'}${command.upstreamId !== undefined ? ` (identity: --upstream-id ${renderValue(command.upstreamId)})` : ''}`;
  const served = `${renderValue(upstream.identity.name)} ${renderValue(upstream.identity.version)}`;
  const details = `upstream ${where}; policy: ${policy.confirm.length} confirm, ${policy.allow.length} allow, ${policy.deny.length} deny${command.confirmUnnamed ? ', unnamed tools asked' : ''}; audience ${JSON.stringify(command.audience)}; ttl ${command.ttlSeconds}s; ledger ${runtime.storeKind}`;
  const closeUpstream = (): Promise<void> => upstream.close();
  if (command.http) {
    await runtime.serveHttp(() => factory(), served, details, closeUpstream);
    return -1;
  }
  const handle = serveStdio(factory, { onerror: (error) => log(error.message) });
  runtime.runUntilStopped({ input: true, end: () => handle.close().catch(() => {}) }, closeUpstream);
  log(
    `serving ${served} over stdio; ${details}; approval ${approval ? `passkey, page on ${approval.origin}` : 'form'}`,
  );
  return -1;
}

/** Whether a URL's hostname is a loopback name or address. */
function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.[0-9]+\.[0-9]+\.[0-9]+$/.test(hostname);
}

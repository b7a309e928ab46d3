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
import type { Tool } from '@modelcontextprotocol/client';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { createConfirmation } from '../guard/confirmation.js';
import { PLAN_TOOL } from '../guard/planSpec.js';
import { renderValue } from '../prompt/render.js';
import {
  checkGrantsAsked,
  EMPTY_POLICY,
  grantSubject,
  largestQuorum,
  parsePolicy,
  quorumFor,
  type Policy,
} from '../proxy/policy.js';
import { createProxy } from '../proxy/server.js';
import { shownUrl, Upstream } from '../proxy/upstream.js';
import { asUsageError, notifyWords, UsageError } from './common.js';
import type { ProxyCommand } from './proxyArgs.js';
import { explainReport, explainTools, startupWords, type ExplainOptions } from './proxyExplain.js';
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
  if (command.plans && policy.grants?.has(PLAN_TOOL))
    throw new UsageError(
      `--policy ${command.policyPath}: ${grantSubject(PLAN_TOOL)}: with --plans, ${PLAN_TOOL} is the proxy's own tool, which approves plans and is never granted`,
    );
  // Tool and approver names in diagnostics are untrusted text: rendered like the question's.
  // Passkey approval: each tool's quorum is the largest of the policy's matching globs, never below --approvers-required.
  const floor = command.approval.approversRequired;
  if ((policy.quorum?.length ?? 0) > 0 && command.approval.approval !== 'passkey')
    throw new UsageError(`--policy ${command.policyPath}: quorum needs --approval passkey`);
  const explaining: ExplainOptions = {
    confirmUnnamed: command.confirmUnnamed,
    plans: command.plans,
    quorumFloor: command.approval.approval === 'passkey' ? floor : undefined,
  };
  // --explain: the upstream's tools and what would be done with each; nothing is opened or served.
  if (command.explain) return explain(command, policy, explaining);
  const runtime = await openRuntime(command, {
    log,
    events: eventLogger(log, 'forwarded', renderValue),
    ...((policy.quorum?.length ?? 0) > 0
      ? { quorum: { forTool: (tool: string) => quorumFor(policy, tool, floor), largest: largestQuorum(policy, floor) } }
      : {}),
  });
  const { approval } = runtime;
  // With --plans, a later call looks for an unused slot of an approved plan before it is asked.
  const confirmation = await createConfirmation({ ...(await runtime.confirmationOptions()), plans: command.plans });
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
  // The upstream's tools as listed at start-up: said on stderr with what will be done with each, and
  // with grants or plans, checked against them.
  const listed = await startupTools(upstream);
  const checked = command.plans || (policy.grants?.size ?? 0) > 0;
  const refusal =
    typeof listed === 'string' ? (checked ? listed : undefined) : startupRefusal(listed ?? [], policy, command);
  if (refusal !== undefined) {
    await upstream.close().catch(() => {});
    await runtime.close();
    if (refusal instanceof UsageError) throw refusal;
    log(refusal);
    return 1;
  }
  log(
    typeof listed === 'string'
      ? `tools: ${listed}; each call is decided from the list as it is then`
      : `tools as listed at start-up: ${listed === undefined ? 'the upstream offers no tools' : startupWords(explainTools(policy, listed, explaining))}`,
  );
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
    plans: command.plans,
    listMaxAgeSeconds: command.listMaxAgeSeconds,
  });
  const where = `${command.upstream.kind === 'url' ? `at ${shownUrl(command.upstream.url)}` : 'spawned over stdio'}${command.upstreamId !== undefined ? ` (identity: --upstream-id ${renderValue(command.upstreamId)})` : ''}`;
  const served = `${renderValue(upstream.identity.name)} ${renderValue(upstream.identity.version)}`;
  const details = `upstream ${where}; policy: ${policy.confirm.length} confirm, ${policy.allow.length} allow, ${policy.deny.length} deny${command.confirmUnnamed ? ', unnamed tools asked' : ''}${grantsWords(policy)}${command.plans ? '; plans (confirm_plan)' : ''}${listAgeWords(command.listMaxAgeSeconds, upstream)}; audience ${JSON.stringify(command.audience)}; ttl ${command.ttlSeconds}s; ledger ${runtime.storeKind}`;
  const closeUpstream = (): Promise<void> => upstream.close();
  if (command.http) {
    await runtime.serveHttp(() => factory(), served, details, closeUpstream);
    return -1;
  }
  const handle = serveStdio(factory, { onerror: (error) => log(error.message) });
  runtime.runUntilStopped({ input: true, end: () => handle.close().catch(() => {}) }, closeUpstream);
  log(
    `serving ${served} over stdio; ${details}; approval ${approval ? `passkey, page on ${approval.origin}${notifyWords(approval)}` : 'form'}`,
  );
  return -1;
}

/**
 * The serving line's words for `--list-max-age` (`''` without it): the risk it takes, or that it
 * changes nothing for an upstream whose list-change notices keep the list current.
 */
function listAgeWords(seconds: number, upstream: Upstream): string {
  if (seconds === 0) return '';
  if (upstream.client.getServerCapabilities()?.tools?.listChanged === true)
    return `; --list-max-age ${seconds}s unused (the upstream announces tool-list changes: its list is kept until one)`;
  return `; tool list kept up to ${seconds}s (--list-max-age: a tool flipped to destructive within it passes unasked)`;
}

/** The serving line's words for the policy's grants (`''` when none). */
function grantsWords(policy: Policy): string {
  const n = policy.grants?.size ?? 0;
  return n === 0 ? '' : `; grants for ${n} tool${n === 1 ? '' : 's'}`;
}

/**
 * The upstream's tools as listed at start-up (one listing, every page).
 *
 * @returns the tools; undefined when the upstream offers no tools; a line to log when the list
 *   cannot be read.
 */
async function startupTools(upstream: Upstream): Promise<Tool[] | string | undefined> {
  if (!upstream.client.getServerCapabilities()?.tools) return undefined;
  try {
    return await upstream.listTools();
  } catch (e) {
    return `the upstream's tool list cannot be read at start-up (${(e as Error).message})`;
  }
}

/**
 * `--explain`: starts the upstream (its roots are not relayed: there is no client), prints its tools
 * with what the proxy would do with each ({@link explainReport}) on stdout, and ends it.
 *
 * @returns 0; 1 when the upstream cannot be started or reached, or its tool list cannot be read.
 */
async function explain(command: ProxyCommand, policy: Policy, options: ExplainOptions): Promise<number> {
  const timing = {
    callTimeoutMs: command.upstreamTimeoutSeconds * 1000,
    log,
    roots: false,
    ...(command.upstreamId !== undefined ? { id: command.upstreamId } : {}),
  };
  let upstream: Upstream;
  try {
    upstream =
      command.upstream.kind === 'url'
        ? await Upstream.connectHttp({ url: command.upstream.url, headers: command.upstream.headers, ...timing })
        : await Upstream.spawn({ command: command.upstream.command, ...timing });
  } catch (e) {
    log((e as Error).message);
    return 1;
  }
  try {
    const listed = await startupTools(upstream);
    if (typeof listed === 'string') {
      log(listed);
      return 1;
    }
    const served = `${renderValue(upstream.identity.name)} ${renderValue(upstream.identity.version)}`;
    process.stdout.write(explainReport(served, explainTools(policy, listed ?? [], options)));
    if (command.plans && listed?.some((t) => t.name === PLAN_TOOL))
      log(`--plans: the upstream has a tool named ${PLAN_TOOL}: serving would refuse to start (exit 2)`);
    return 0;
  } finally {
    await upstream.close().catch(() => {});
  }
}

/**
 * The start-up checks against the upstream's tools as listed now: with `--plans`, no upstream tool
 * may be named `confirm_plan`; a grant must be for a tool that is asked ({@link checkGrantsAsked}).
 *
 * @returns a {@link UsageError} (exit 2) naming what is refused, or undefined when all is well.
 */
function startupRefusal(tools: readonly Tool[], policy: Policy, command: ProxyCommand): UsageError | undefined {
  if (command.plans && tools.some((t) => t.name === PLAN_TOOL))
    return new UsageError(
      `--plans: the upstream has a tool named ${PLAN_TOOL}, the name of the proxy's own plans tool; without --plans it is served as any other tool`,
    );
  try {
    checkGrantsAsked(policy, tools, command.confirmUnnamed);
  } catch (e) {
    const usage = asUsageError(e, `--policy ${command.policyPath}: `);
    return usage instanceof UsageError ? usage : new UsageError(String(e));
  }
  return undefined;
}

/** Whether a URL's hostname is a loopback name or address. */
function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.[0-9]+\.[0-9]+\.[0-9]+$/.test(hostname);
}

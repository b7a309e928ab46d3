#!/usr/bin/env node
/**
 * `mcp-confirm`: the command-line entry. The only module that prints.
 * Serving over stdio, stdout carries only the protocol: every diagnostic goes to stderr.
 *
 * @module
 */
import { readFile } from 'node:fs/promises';
// Cold start: only the argument parser is imported up front. Each command imports what it needs
// (the demo never loads the server, `serve` never loads the demo or a store it was not given), and
// the quarantine scan runs once the server already answers (MCP hosts wait for the first answer).
import type { ConfirmEvent } from '../guard/confirmation.js';
import type { Roots } from '../fs/roots.js';
import { EXIT_USAGE, USAGE, UsageError, parseCommand, type Command } from './args.js';
import { readKeyFile } from './common.js';
import type { PasskeyApproval, ApprovalEvent } from '../approval/passkey.js';

function logEvent(event: ConfirmEvent): void {
  switch (event.type) {
    case 'asked':
      process.stderr.write(`mcp-confirm: asked to confirm ${event.tool}\n`);
      break;
    case 'asked-again':
      process.stderr.write(`mcp-confirm: asked again for ${event.tool} (${event.reason})\n`);
      break;
    case 'refused':
      process.stderr.write(`mcp-confirm: refused ${event.tool}: ${event.code}\n`);
      break;
    case 'state-refused':
      process.stderr.write(`mcp-confirm: requestState refused (${event.reason})\n`);
      break;
    case 'not-confirmed':
      process.stderr.write(`mcp-confirm: ${event.tool} not confirmed (${event.action})\n`);
      break;
    case 'confirmed':
      process.stderr.write(`mcp-confirm: ${event.tool} confirmed and done${event.approver !== undefined ? ` (approved by ${event.approver})` : ''}\n`);
      break;
    case 'approval-pending':
      process.stderr.write(`mcp-confirm: ${event.tool}: no decision on the approval page yet; asked again\n`);
      break;
    case 'internal-error':
      process.stderr.write(`mcp-confirm: internal error in ${event.tool}: ${event.error instanceof Error ? event.error.message : String(event.error)}\n`);
      break;
  }
}

/**
 * The package's version, read at run time from the package.json two directories above this
 * module (`dist/cli/main.js` and `src/cli/main.ts` alike).
 *
 * @throws Error when package.json has no string `version`.
 */
async function packageVersion(): Promise<string> {
  const text = await readFile(new URL('../../package.json', import.meta.url), 'utf8');
  const { version } = JSON.parse(text) as { version?: unknown };
  if (typeof version !== 'string') throw new Error('package.json has no version');
  return version;
}

function logApprovalEvent(event: ApprovalEvent): void {
  switch (event.type) {
    case 'approval-approved':
      process.stderr.write(`mcp-confirm: approval page: approved by ${event.approver}\n`);
      break;
    case 'approval-declined':
      process.stderr.write('mcp-confirm: approval page: denied\n');
      break;
    case 'approval-refused':
      process.stderr.write(`mcp-confirm: approval page: refused: ${event.reason}\n`);
      break;
  }
}

/** Starts the approval page for `--approval passkey`, or nothing. Start-up errors are exit 2, naming what. */
async function startApproval(command: Extract<Command, { kind: 'serve' }>, ledger: unknown): Promise<PasskeyApproval | undefined> {
  if (command.approval !== 'passkey' || command.approvers === undefined) return undefined;
  const rootsModule = await import('../fs/roots.js');
  const { RootError } = rootsModule;
  let roots: Roots;
  try {
    roots = await rootsModule.Roots.open(command.roots);
  } catch (e) {
    if (e instanceof RootError) throw new UsageError(e.message);
    throw e;
  }
  // Loaded only here, so a form-mode server never loads the WebAuthn library.
  const { startPasskeyApproval } = await import('./approvalStart.js');
  return startPasskeyApproval(command, {
    store: ledger,
    forbiddenDirs: roots.list.map((r) => r.realPath),
    onEvent: logApprovalEvent,
    warn: (line) => process.stderr.write(`mcp-confirm: ${line}\n`),
    authIssuer: command.http?.auth?.issuer,
  });
}

async function serve(command: Extract<Command, { kind: 'serve' }>): Promise<void> {
  // HTTP serving (--http): its modules load only when asked for, so stdio start-up does not pay for them.
  const http = command.http ? await import('./serveHttp.js') : undefined;
  if (http && command.http) await http.checkHttpAuth(command.http);
  const [{ serveStdio }, { RootError }, { createDemoServer }, { openLedger }] = await Promise.all([
    import('@modelcontextprotocol/server/stdio'),
    import('../fs/roots.js'),
    import('../server/deleteFile.js'),
    import('./ledgerSpec.js'),
  ]);
  const keys = await readKeyFile(command.keyFile);
  // --audit: this process's trail file (its module loads only when asked for).
  const audit = command.audit !== undefined ? await (await import('./auditCli.js')).openAuditTrail(command.audit, keys!, (line) => process.stderr.write(`mcp-confirm: ${line}\n`)) : undefined;
  const opened = await openLedger(command.ledger, command.audience, (line) => process.stderr.write(`mcp-confirm: ${line}\n`));
  // Over HTTP: decisions counted and ledger calls timed for /metrics.
  const metrics = http?.createMetrics();
  const ledger = metrics ? metrics.instrument(opened) : opened;
  let approval: PasskeyApproval | undefined;
  try {
    // The same object as the ledger (over HTTP the timed wrapper, which forwards the approval records).
    approval = await startApproval(command, ledger);
  } catch (e) {
    await ledger.close?.();
    await audit?.close();
    throw e;
  }
  let built;
  try {
    built = await createDemoServer({
      ...(approval ? { approval } : {}),
      roots: command.roots,
      audience: command.audience,
      ttlSeconds: command.ttlSeconds,
      ledger,
      onEvent: metrics ? (event: ConfirmEvent) => (logEvent(event), metrics.observe(event)) : logEvent,
      ...(keys ? { keys } : {}),
      ...(http ? { principal: http.principal } : {}),
      ...(audit ? { audit } : {}),
    });
  } catch (e) {
    await approval?.close();
    await ledger.close?.();
    await audit?.close();
    if (e instanceof RootError) throw new UsageError(e.message);
    throw e;
  }
  const reportLeftovers = async (): Promise<void> => {
    const [{ findQuarantineLeftovers }, { renderPath }] = await Promise.all([import('../fs/target.js'), import('../prompt/render.js')]);
    for (const leftover of await findQuarantineLeftovers(built.roots)) {
      process.stderr.write(`mcp-confirm: warning: a quarantined file from an interrupted delete was found (left in place): ${renderPath(leftover)}\n`);
    }
  };
  if (http && command.http) {
    await reportLeftovers();
    const ops = { ledger: opened, metrics: metrics!, served: 'delete_file', log: (line: string) => process.stderr.write(`mcp-confirm: ${line}\n`) };
    await http.serveHttp(command.http, built.factory, { ...ops, ...(approval ? { approval } : {}) }, async () => {
      await audit?.close();
      await approval?.close();
      await ledger.close?.();
    });
    return;
  }
  const handle = serveStdio(built.factory, {
    onerror: (error) => process.stderr.write(`mcp-confirm: ${error.message}\n`),
  });
  // Answering already. The leftovers report and then the "serving" line follow; a stop (an early end of
  // stdin, a signal) waits for them, so neither is lost.
  const started = (async (): Promise<void> => {
    await reportLeftovers();
    process.stderr.write(
      `mcp-confirm: serving delete_file over stdio; roots: ${built.roots.list.map((r) => JSON.stringify(r.realPath)).join(', ')}; audience ${JSON.stringify(command.audience)}; ttl ${command.ttlSeconds}s; ledger ${ledger.kind}; keys ${keys ? keys.kids.join(',') : 'random per process'}; approval ${approval ? `passkey, page on ${approval.origin}` : 'form'}\n`,
    );
  })();
  const stop = async (): Promise<void> => {
    await started.catch(() => {});
    await handle.close().catch(() => {});
    await audit?.close().catch(() => {});
    await approval?.close().catch(() => {});
    await ledger.close?.().catch(() => {});
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
  process.stdin.once('end', () => void stop());
  await started;
}

async function main(argv: readonly string[]): Promise<number> {
  // `mcp-confirm proxy …` has its own options and the upstream command after `--` (src/cli/proxy.ts).
  if (argv[0] === 'proxy') {
    try {
      const { runProxy } = await import('./proxy.js');
      return await runProxy(argv.slice(1));
    } catch (e) {
      if (e instanceof UsageError) {
        process.stderr.write(`mcp-confirm: ${e.message}\n`);
        return EXIT_USAGE;
      }
      throw e;
    }
  }
  let command: Command;
  try {
    command = parseCommand(argv);
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`mcp-confirm: ${e.message}\n\n${USAGE}\n`);
      return EXIT_USAGE;
    }
    throw e;
  }
  try {
    switch (command.kind) {
      case 'help':
        process.stdout.write(`${USAGE}\n`);
        return 0;
      case 'version':
        process.stdout.write(`${await packageVersion()}\n`);
        return 0;
      case 'keygen': {
        const { KeyRing } = await import('../state/keyRing.js');
        process.stdout.write(`${JSON.stringify({ keys: [KeyRing.generateSpec(command.kid)] }, null, 2)}\n`);
        return 0;
      }
      case 'audit-verify': {
        const { runAuditVerify } = await import('./auditCli.js');
        return await runAuditVerify(command.file, command.keyFile);
      }
      case 'demo': {
        const { runDemo } = await import('./demo.js');
        return await runDemo({ yes: command.yes });
      }
      case 'serve':
        await serve(command);
        return -1; // keep running
      case 'approvers-enroll':
      case 'approvers-list':
      case 'approvers-remove': {
        const { runApprovers } = await import('./approvers.js');
        return await runApprovers(command);
      }
    }
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`mcp-confirm: ${e.message}\n`);
      return EXIT_USAGE;
    }
    throw e;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (e: unknown) => {
    process.stderr.write(`mcp-confirm: fatal: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exitCode = 1;
  },
);

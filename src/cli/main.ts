#!/usr/bin/env node
/**
 * `mcp-confirm`: the command-line entry. The only module that prints.
 * Serving over stdio, stdout carries only the protocol: every diagnostic goes to stderr.
 *
 * @module
 */
// Cold start: nothing is imported up front. The argument parser loads at once, and beside it, when
// the command line looks like serving over stdio, what serving needs before its first answer (the
// SDK, the roots, the tool's registration: see prefetchStdio). Each command imports what it needs
// (the demo never loads the server, `serve` never loads the demo or a store it was not given), and
// the confirmation layer, the quarantine scan and the "serving" line follow the first answer (MCP
// hosts wait for it).
import type { ConfirmEvent } from '../guard/confirmation.js';
import type { Roots } from '../fs/roots.js';
import type { ConfirmStore } from '../store/confirmStore.js';
import type { AuditLog } from '../audit/auditLog.js';
import type { Command } from './args.js';
import type { PasskeyApproval, ApprovalEvent } from '../approval/passkey.js';

/**
 * Arguments after which the command does not serve over stdio (or may not: `--http`), so
 * {@link prefetchStdio} loads nothing. A hint only: the parser decides what runs.
 */
const NOT_STDIO = new Set(['proxy', 'demo', 'keygen', 'audit', 'approvers', '--help', '-h', '--version']);

/**
 * Starts loading the modules `mcp-confirm --root DIR` serves stdio with, while the argument parser
 * loads, when `argv` looks like that command (a failure here is ignored: `serve` imports the same
 * modules and reports it).
 */
function prefetchStdio(argv: readonly string[]): void {
  if (argv.some((a) => NOT_STDIO.has(a) || a.startsWith('--http'))) return;
  for (const load of [() => import('@modelcontextprotocol/server/stdio'), () => import('./lazyServer.js'), () => import('../fs/roots.js')]) {
    load().catch(() => {});
  }
}

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
      process.stderr.write(`mcp-confirm: ${event.tool} not confirmed (${event.action}${event.on === 'page' ? ' on the approval page' : ''})\n`);
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
  const { readFile } = await import('node:fs/promises');
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
async function startApproval(command: Extract<Command, { kind: 'serve' }>, ledger: ConfirmStore | undefined): Promise<PasskeyApproval | undefined> {
  if (command.approval !== 'passkey' || command.approvers === undefined) return undefined;
  const { UsageError } = await import('./common.js');
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
  const { UsageError, readKeyFile, UNKNOWN_HINT } = await import('./common.js');
  // Over stdio the confirmation layer loads once the first answer is out (./lazyServer.ts), and so
  // does a memory ledger (made with it): before it, only the SDK, the roots and
  // the tool's registration. A store named by --ledger opens here, so a bad one is exit 2.
  const ledgerLater = !http && command.ledger === 'memory' && command.approval !== 'passkey';
  const { Roots, RootError } = await import('../fs/roots.js');
  // The roots are checked while the SDK loads; a bad one is reported after the key file and ledger, as before.
  const rootsOpened = Roots.open(command.roots);
  rootsOpened.catch(() => {});
  const [ledgerSpec, stdio, lazy] = await Promise.all([
    ledgerLater ? undefined : import('./ledgerSpec.js'),
    http ? undefined : import('@modelcontextprotocol/server/stdio'),
    http ? undefined : import('./lazyServer.js'),
  ]);
  const keys = await readKeyFile(command.keyFile);
  const opened = await ledgerSpec?.openLedger(command.ledger, command.audience, (line) => process.stderr.write(`mcp-confirm: ${line}\n`));
  // --audit: this process's trail file (its module loads only when asked for), opened after the
  // ledger, which records the trail's head when it is shared, and closed before it.
  let audit: AuditLog | undefined;
  try {
    audit = command.audit !== undefined ? await (await import('./auditCli.js')).openAuditTrail(command.audit, keys!, (line) => process.stderr.write(`mcp-confirm: ${line}\n`), opened) : undefined;
  } catch (e) {
    await opened?.close?.().catch(() => {});
    throw e;
  }
  // Over HTTP: decisions counted and ledger calls timed for /metrics.
  const metrics = http?.createMetrics();
  /** The ledger given to the confirmation layer; undefined: a MemoryLedger made when the layer loads. */
  const ledger = metrics && opened ? metrics.instrument(opened) : opened;
  /** The confirmation layer's ledger once it is loaded. */
  let inUse: ConfirmStore | undefined = ledger;
  let approval: PasskeyApproval | undefined;
  try {
    // The same object as the ledger (over HTTP the timed wrapper, which forwards the approval records).
    approval = await startApproval(command, ledger);
  } catch (e) {
    await audit?.close();
    await ledger?.close?.();
    throw e;
  }
  const closeAll = async (): Promise<void> => {
    await audit?.close().catch(() => {});
    await approval?.close().catch(() => {});
    await inUse?.close?.().catch(() => {});
  };
  let roots: Roots;
  try {
    roots = await rootsOpened;
  } catch (e) {
    await closeAll();
    if (e instanceof RootError) throw new UsageError(e.message);
    throw e;
  }
  const confirmationOptions = {
    ...(approval ? { approval } : {}),
    audience: command.audience,
    ttlSeconds: command.ttlSeconds,
    ...(ledger ? { store: ledger } : {}),
    unknownHint: UNKNOWN_HINT,
    onEvent: metrics ? (event: ConfirmEvent) => (logEvent(event), metrics.observe(event)) : logEvent,
    ...(keys ? { keys } : {}),
    ...(http ? { principal: http.principal } : {}),
    ...(audit ? { audit } : {}),
  };
  const reportLeftovers = async (): Promise<void> => {
    const [{ findQuarantineLeftovers }, { renderPath }] = await Promise.all([import('../fs/target.js'), import('../prompt/render.js')]);
    for (const leftover of await findQuarantineLeftovers(roots)) {
      process.stderr.write(`mcp-confirm: warning: a quarantined file from an interrupted delete was found (left in place): ${renderPath(leftover)}\n`);
    }
  };
  if (http && command.http && opened && metrics) {
    let built;
    try {
      const { createDemoServer } = await import('../demo/deleteFile.js');
      built = await createDemoServer({ ...confirmationOptions, roots: command.roots });
    } catch (e) {
      await closeAll();
      if (e instanceof RootError) throw new UsageError(e.message);
      throw e;
    }
    await reportLeftovers();
    const ops = { ledger: opened, metrics, served: 'delete_file', log: (line: string) => process.stderr.write(`mcp-confirm: ${line}\n`) };
    await http.serveHttp(command.http, built.factory, { ...ops, ...(approval ? { approval } : {}) }, closeAll);
    return;
  }
  const { serveStdio, StdioServerTransport } = stdio!;
  const server = lazy!.lazyDeleteFileServer(
    async () => {
      const [{ createConfirmation }, { deleteFileTool }, { MemoryLedger }] = await Promise.all([
        import('../guard/confirmation.js'),
        import('../demo/deleteFile.js'),
        import('../store/memory.js'),
      ]);
      // The store opened above, else (ledgerLater) the memory ledger, made now.
      inUse ??= new MemoryLedger();
      const confirmation = await createConfirmation({ ...confirmationOptions, store: inUse });
      return { confirmation, tool: deleteFileTool(roots) };
    },
    (line) => process.stderr.write(`mcp-confirm: ${line}\n`),
  );
  // The leftovers report and then the "serving" line, once: after the first answer (an MCP host waits
  // for it), at the end of stdin, or at once for a person at a terminal. A stop waits for them, so
  // neither is lost.
  let announced: Promise<void> | undefined;
  const announce = (): Promise<void> =>
    (announced ??= (async (): Promise<void> => {
      await reportLeftovers();
      process.stderr.write(
        `mcp-confirm: serving delete_file over stdio; roots: ${roots.list.map((r) => JSON.stringify(r.realPath)).join(', ')}; audience ${JSON.stringify(command.audience)}; ttl ${command.ttlSeconds}s; ledger ${ledger?.kind ?? 'memory'}; keys ${keys ? keys.kids.join(',') : 'random per process'}; approval ${approval ? `passkey, page on ${approval.origin}` : 'form'}\n`,
      );
    })().catch((e: unknown) => {
      process.stderr.write(`mcp-confirm: ${e instanceof Error ? e.message : String(e)}\n`);
    }));
  /** Stdio whose first message out starts loading the confirmation layer, then the announcement. */
  class AnsweringTransport extends StdioServerTransport {
    #answered = false;
    override async send(...args: Parameters<InstanceType<typeof StdioServerTransport>['send']>): Promise<void> {
      await super.send(...args);
      if (this.#answered) return;
      this.#answered = true;
      server.preload();
      void announce();
    }
  }
  const handle = serveStdio(server.factory, {
    transport: new AnsweringTransport(),
    onerror: (error) => process.stderr.write(`mcp-confirm: ${error.message}\n`),
  });
  if (process.stdin.isTTY) void announce();
  const stop = async (): Promise<void> => {
    await announce();
    await handle.close().catch(() => {});
    await closeAll();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
  process.stdin.once('end', () => void stop());
}

async function main(argv: readonly string[]): Promise<number> {
  prefetchStdio(argv);
  const { EXIT_USAGE, USAGE, UsageError, parseCommand } = await import('./args.js');
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
      // With no arguments at all, the whole usage; otherwise the one problem and where the usage is.
      process.stderr.write(argv.length === 0 ? `mcp-confirm: ${e.message}\n\n${USAGE}\n` : `mcp-confirm: ${e.message}\nRun 'mcp-confirm --help' for the usage.\n`);
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
        return await runAuditVerify(command);
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

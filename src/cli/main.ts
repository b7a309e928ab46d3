#!/usr/bin/env node
/**
 * `mcp-confirm`: the command-line entry. The only module that prints.
 * Serving over stdio, stdout carries only the protocol: every diagnostic goes to stderr.
 *
 * @module
 */
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { KeyRing } from '../state/keyRing.js';
import { RootError } from '../fs/roots.js';
import { findQuarantineLeftovers } from '../fs/target.js';
import { createDemoServer } from '../server/deleteFile.js';
import { renderPath } from '../prompt/render.js';
import type { ConfirmEvent } from '../guard/confirmation.js';
import { EXIT_USAGE, USAGE, UsageError, parseCommand, type Command } from './args.js';
import { openLedger } from './ledgerSpec.js';
import { Roots } from '../fs/roots.js';
import type { PasskeyApproval, ApprovalEvent } from '../approval/passkey.js';
import { isApprovalStore } from '../approval/store.js';

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
  if (!isApprovalStore(ledger)) throw new UsageError('--approval passkey: this ledger cannot hold approvals');
  let roots: Roots;
  try {
    roots = await Roots.open(command.roots);
  } catch (e) {
    if (e instanceof RootError) throw new UsageError(e.message);
    throw e;
  }
  // Loaded only here, so a form-mode server never loads the WebAuthn library.
  const { ApproversFileError, loadApproversForServer } = await import('../approval/approvers.js');
  const { ListenError } = await import('../approval/http.js');
  const { PasskeyApproval } = await import('../approval/passkey.js');
  try {
    const approvers = await loadApproversForServer(command.approvers, roots.list.map((r) => r.realPath));
    return await PasskeyApproval.start({
      store: ledger,
      approvers,
      port: command.approvalPort,
      waitSeconds: command.approvalWaitSeconds,
      onEvent: logApprovalEvent,
    });
  } catch (e) {
    if (e instanceof ApproversFileError || e instanceof ListenError || e instanceof RangeError) throw new UsageError(`--approval passkey: ${e.message}`);
    throw e;
  }
}

async function serve(command: Extract<Command, { kind: 'serve' }>): Promise<void> {
  let keys: KeyRing | undefined;
  if (command.keyFile !== undefined) {
    try {
      keys = await KeyRing.fromFile(command.keyFile);
    } catch (e) {
      throw new UsageError(`--key-file: ${(e as Error).message}`);
    }
  }
  const ledger = await openLedger(command.ledger, command.audience, (line) => process.stderr.write(`mcp-confirm: ${line}\n`));
  let approval: PasskeyApproval | undefined;
  try {
    approval = await startApproval(command, ledger);
  } catch (e) {
    await ledger.close?.();
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
      onEvent: logEvent,
      ...(keys ? { keys } : {}),
    });
  } catch (e) {
    await approval?.close();
    await ledger.close?.();
    if (e instanceof RootError) throw new UsageError(e.message);
    throw e;
  }
  for (const leftover of await findQuarantineLeftovers(built.roots)) {
    process.stderr.write(`mcp-confirm: warning: a quarantined file from an interrupted delete was found (left in place): ${renderPath(leftover)}\n`);
  }
  const handle = serveStdio(built.factory, {
    onerror: (error) => process.stderr.write(`mcp-confirm: ${error.message}\n`),
  });
  const stop = async (): Promise<void> => {
    await handle.close().catch(() => {});
    await approval?.close().catch(() => {});
    await ledger.close?.().catch(() => {});
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
  process.stdin.once('end', () => void stop());
  process.stderr.write(
    `mcp-confirm: serving delete_file over stdio; roots: ${built.roots.list.map((r) => JSON.stringify(r.realPath)).join(', ')}; audience ${JSON.stringify(command.audience)}; ttl ${command.ttlSeconds}s; ledger ${ledger.kind}; keys ${keys ? keys.kids.join(',') : 'random per process'}; approval ${approval ? `passkey, page on ${approval.origin}` : 'form'}\n`,
  );
}

async function main(argv: readonly string[]): Promise<number> {
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
      case 'keygen':
        process.stdout.write(`${JSON.stringify({ keys: [KeyRing.generateSpec(command.kid)] }, null, 2)}\n`);
        return 0;
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

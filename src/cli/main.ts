#!/usr/bin/env node
/**
 * `mcp-confirm`: the command-line entry. The only module that prints.
 * Serving over stdio, stdout carries only the protocol: every diagnostic goes to stderr.
 *
 * @module
 */
// Cold start: only the argument parser is imported up front. Each command imports what it needs
// (the demo never loads the server, `serve` never loads the demo or a store it was not given), and
// the quarantine scan runs once the server already answers (MCP hosts wait for the first answer).
import type { ConfirmEvent } from '../guard/confirmation.js';
import type { KeyRing } from '../state/keyRing.js';
import { EXIT_USAGE, USAGE, UsageError, parseCommand, type Command } from './args.js';

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
      process.stderr.write(`mcp-confirm: ${event.tool} confirmed and done\n`);
      break;
    case 'internal-error':
      process.stderr.write(`mcp-confirm: internal error in ${event.tool}: ${event.error instanceof Error ? event.error.message : String(event.error)}\n`);
      break;
  }
}

async function serve(command: Extract<Command, { kind: 'serve' }>): Promise<void> {
  const [{ serveStdio }, { KeyRing }, { RootError }, { createDemoServer }, { openLedger }] = await Promise.all([
    import('@modelcontextprotocol/server/stdio'),
    import('../state/keyRing.js'),
    import('../fs/roots.js'),
    import('../server/deleteFile.js'),
    import('./ledgerSpec.js'),
  ]);
  let keys: KeyRing | undefined;
  if (command.keyFile !== undefined) {
    try {
      keys = await KeyRing.fromFile(command.keyFile);
    } catch (e) {
      throw new UsageError(`--key-file: ${(e as Error).message}`);
    }
  }
  const ledger = await openLedger(command.ledger, command.audience, (line) => process.stderr.write(`mcp-confirm: ${line}\n`));
  let built;
  try {
    built = await createDemoServer({
      roots: command.roots,
      audience: command.audience,
      ttlSeconds: command.ttlSeconds,
      ledger,
      onEvent: logEvent,
      ...(keys ? { keys } : {}),
    });
  } catch (e) {
    await ledger.close?.();
    if (e instanceof RootError) throw new UsageError(e.message);
    throw e;
  }
  const handle = serveStdio(built.factory, {
    onerror: (error) => process.stderr.write(`mcp-confirm: ${error.message}\n`),
  });
  // Answering already; the leftovers report (before the "serving" line) only warns.
  const [{ findQuarantineLeftovers }, { renderPath }] = await Promise.all([import('../fs/target.js'), import('../prompt/render.js')]);
  for (const leftover of await findQuarantineLeftovers(built.roots)) {
    process.stderr.write(`mcp-confirm: warning: a quarantined file from an interrupted delete was found (left in place): ${renderPath(leftover)}\n`);
  }
  const stop = async (): Promise<void> => {
    await handle.close().catch(() => {});
    await ledger.close?.().catch(() => {});
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
  process.stdin.once('end', () => void stop());
  process.stderr.write(
    `mcp-confirm: serving delete_file over stdio; roots: ${built.roots.list.map((r) => JSON.stringify(r.realPath)).join(', ')}; audience ${JSON.stringify(command.audience)}; ttl ${command.ttlSeconds}s; ledger ${ledger.kind}; keys ${keys ? keys.kids.join(',') : 'random per process'}\n`,
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
      case 'keygen': {
        const { KeyRing } = await import('../state/keyRing.js');
        process.stdout.write(`${JSON.stringify({ keys: [KeyRing.generateSpec(command.kid)] }, null, 2)}\n`);
        return 0;
      }
      case 'demo': {
        const { runDemo } = await import('./demo.js');
        return await runDemo({ yes: command.yes });
      }
      case 'serve':
        await serve(command);
        return -1; // keep running
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

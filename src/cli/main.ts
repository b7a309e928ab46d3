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
import type { Roots } from '../fs/roots.js';
import type { Command, ServeCommand } from './args.js';
import type { Runtime } from './runtime.js';

/**
 * Arguments after which the command does not serve over stdio (or may not: `--http`), so
 * {@link prefetchStdio} loads nothing. A hint only: the parser decides what runs.
 */
const NOT_STDIO = new Set([
  'proxy',
  'demo',
  'keygen',
  'audit',
  'approvers',
  'grants',
  'store',
  '--help',
  '-h',
  '--version',
]);

/**
 * Starts loading the modules `mcp-confirm --root DIR` serves stdio with, while the argument parser
 * loads, when `argv` looks like that command (a failure here is ignored: `serve` imports the same
 * modules and reports it).
 */
function prefetchStdio(argv: readonly string[]): void {
  if (argv.some((a) => NOT_STDIO.has(a) || a.startsWith('--http'))) return;
  for (const load of [
    () => import('@modelcontextprotocol/server/stdio'),
    () => import('./lazyServer.js'),
    () => import('./runtime.js'),
    () => import('../fs/roots.js'),
  ]) {
    load().catch(() => {});
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

/** The serving line's words for `--grants` and `--plans` (`''` when neither is on), from `; `. */
function standingText(command: ServeCommand): string {
  const grant = command.grant;
  return (
    (grant ? `; grants ${grant.arguments.path} (at most ${grant.maxUses} uses, ${grant.maxSeconds}s)` : '') +
    (command.plans ? '; plans (confirm_plan)' : '')
  );
}

/** `confirm_plan`'s name and registration (loaded only with `--plans`). */
async function planRegistration(): Promise<{
  name: string;
  config: { inputSchema: unknown } & Record<string, unknown>;
}> {
  const { PLAN_TOOL, PLAN_TOOL_CONFIG } = await import('../guard/planSpec.js');
  return { name: PLAN_TOOL, config: PLAN_TOOL_CONFIG };
}

/** Diagnostics of `mcp-confirm` on stderr, one line each. */
const log = (line: string): void => void process.stderr.write(`mcp-confirm: ${line}\n`);

/**
 * Serves `delete_file` over the roots: over stdio answering before the confirmation layer loads
 * (`lazyServer.ts`), or over `--http`. Everything else (keys, store, audit trail, approval page,
 * events, running until stopped) is the runtime's (`runtime.ts`).
 */
async function serve(command: ServeCommand): Promise<void> {
  const [{ openRuntime, eventLogger }, { Roots }, { asUsageError }] = await Promise.all([
    import('./runtime.js'),
    import('../fs/roots.js'),
    import('./common.js'),
  ]);
  /** A root that cannot be served (`ERR_CONFIG_ROOT`) is a usage error at start-up (exit 2, naming it). */
  const usage = (e: unknown): unknown => asUsageError(e);
  // Over stdio, what serves before the confirmation layer (already loading: see prefetchStdio).
  const stdioLoaded = command.http
    ? undefined
    : Promise.all([import('@modelcontextprotocol/server/stdio'), import('./lazyServer.js')]);
  stdioLoaded?.catch(() => {});
  // The roots are checked while the rest opens; a bad one is reported after the key file and the
  // store, or, with passkey approval, before the page starts (the approvers file must lie outside them).
  const rootsOpened = Roots.open(command.roots);
  rootsOpened.catch(() => {});
  let runtime: Runtime;
  try {
    runtime = await openRuntime(command, {
      log,
      events: eventLogger(log, 'done'),
      forbiddenDirs: async () => (await rootsOpened).list.map((r) => r.realPath),
    });
  } catch (e) {
    throw usage(e);
  }
  let roots: Roots;
  try {
    roots = await rootsOpened;
  } catch (e) {
    await runtime.close();
    throw usage(e);
  }
  const reportLeftovers = async (): Promise<void> => {
    const [{ findQuarantineLeftovers }, { renderPath }] = await Promise.all([
      import('../fs/target.js'),
      import('../prompt/render.js'),
    ]);
    for (const leftover of await findQuarantineLeftovers(roots)) {
      log(`warning: a quarantined file from an interrupted delete was found (left in place): ${renderPath(leftover)}`);
    }
  };
  if (command.http) {
    let built;
    try {
      const { createDemoServer } = await import('../demo/deleteFile.js');
      built = await createDemoServer({
        ...(await runtime.confirmationOptions()),
        roots: command.roots,
        plans: command.plans,
        ...(command.grant ? { grant: command.grant } : {}),
      });
    } catch (e) {
      await runtime.close();
      throw usage(e);
    }
    await reportLeftovers();
    const standing = standingText(command);
    await runtime.serveHttp(built.factory, 'delete_file', standing === '' ? undefined : standing.slice(2));
    return;
  }
  const [{ serveStdio, StdioServerTransport }, lazy] = await stdioLoaded!;
  const server = lazy.lazyDeleteFileServer(
    async () => {
      const [{ createConfirmation }, { deleteFileTool }] = await Promise.all([
        import('../guard/confirmation.js'),
        import('../demo/deleteFile.js'),
      ]);
      const confirmation = await createConfirmation({ ...(await runtime.confirmationOptions()), plans: command.plans });
      return { confirmation, tool: deleteFileTool(roots), ...(command.grant ? { grant: command.grant } : {}) };
    },
    log,
    command.plans ? { plans: await planRegistration() } : {},
  );
  // The leftovers report and then the "serving" line, once: after the first answer (an MCP host waits
  // for it), at the end of stdin, or at once for a person at a terminal. A stop waits for them, so
  // neither is lost.
  let announced: Promise<void> | undefined;
  const announce = (): Promise<void> =>
    (announced ??= (async (): Promise<void> => {
      await reportLeftovers();
      const { keys, approval } = runtime;
      const { notifyWords } = await import('./common.js');
      log(
        `serving delete_file over stdio; roots: ${roots.list.map((r) => JSON.stringify(r.realPath)).join(', ')}; audience ${JSON.stringify(command.audience)}; ttl ${command.ttlSeconds}s; ledger ${runtime.storeKind}; keys ${keys ? keys.kids.join(',') : 'random per process'}; approval ${approval ? `passkey, page on ${approval.origin}${notifyWords(approval)}` : 'form'}${standingText(command)}`,
      );
    })().catch((e: unknown) => {
      log(e instanceof Error ? e.message : String(e));
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
    onerror: (error) => log(error.message),
  });
  if (process.stdin.isTTY) void announce();
  runtime.runUntilStopped({
    input: true,
    end: async () => {
      await announce();
      await handle.close().catch(() => {});
    },
  });
}

async function main(argv: readonly string[]): Promise<number> {
  prefetchStdio(argv);
  const { EXIT_USAGE, USAGE, UsageError, parseCommand } = await import('./args.js');
  let command: Command;
  try {
    command = parseCommand(argv);
  } catch (e) {
    if (e instanceof UsageError) {
      // With no arguments at all, the whole usage; otherwise the one problem and where the usage is
      // (`proxy` has a usage of its own: the one problem).
      const where =
        argv[0] === 'proxy' ? '' : argv.length === 0 ? `\n${USAGE}\n` : "Run 'mcp-confirm --help' for the usage.\n";
      process.stderr.write(`mcp-confirm: ${e.message}\n${where}`);
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
        const { runKeygen } = await import('./keygen.js');
        return await runKeygen(command);
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
      case 'proxy': {
        if (command.help) {
          process.stdout.write(`${(await import('./proxyArgs.js')).PROXY_USAGE}\n`);
          return 0;
        }
        const { runProxy } = await import('./proxy.js');
        return await runProxy(command);
      }
      case 'approvers-enroll':
      case 'approvers-list':
      case 'approvers-remove': {
        const { runApprovers } = await import('./approvers.js');
        return await runApprovers(command);
      }
      case 'grants-list':
      case 'grants-revoke': {
        const { runGrants } = await import('./grantsCli.js');
        return await runGrants(command);
      }
      case 'store-init': {
        const { runStoreInit } = await import('./storeCli.js');
        return await runStoreInit(command);
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

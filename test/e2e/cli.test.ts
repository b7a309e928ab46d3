/**
 * The built CLI (`dist/cli/main.js`, the package's `bin`) as a real subprocess:
 * stdio serving, exit codes, the key file, and the demo. Needs `npm run build`
 * first (the test command, `npm test`, does it).
 */
import { spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PROCESS_DEADLINE_MS } from '../helpers/deadlines.js';
import { ACCEPT, asked, callTool, connect, MANUAL_CLIENT_OPTIONS } from '../helpers/harness.js';
import { createDemoServer } from '../../src/demo/deleteFile.js';
import { runProcess, stderrSays, type Finished, InPlaceStdioTransport } from '../helpers/processes.js';

const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');
let R: string;
let root: string;
const clients: Client[] = [];

beforeAll(() => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first`);
});
beforeEach(() => {
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-cli-')));
  root = join(R, 'root');
  mkdirSync(root);
  writeFileSync(join(root, 'cache.txt'), 'cache');
  writeFileSync(join(root, 'thesis.txt'), 'thesis');
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => {})));
  rmSync(R, { recursive: true, force: true });
});

async function spawnServer(args: string[]): Promise<{ client: Client; stderr: () => string }> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [MAIN, ...args], stderr: 'pipe' });
  let err = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString('utf8');
  });
  const client = new Client({ name: 'cli-test', version: '0.0.0' }, MANUAL_CLIENT_OPTIONS);
  await client.connect(transport);
  clients.push(client);
  return { client, stderr: () => err };
}

/** Runs the CLI to its end (asynchronously: the test's event loop keeps running). */
function run(args: string[], input = ''): Promise<Finished> {
  return runProcess(process.execPath, [MAIN, ...args], { input });
}

/**
 * Runs `mcp-confirm demo` under script(1), which gives it a real pseudo-terminal as a person running
 * it has, and types `keys` once the prompt `Confirm? [y/N]` is on the screen: by order, not by time.
 * (Keys sent before the demo has put the terminal in raw mode are taken by the terminal's line
 * discipline: a Ctrl-D then becomes an end-of-file the prompt never sees, and script(1) gives up
 * forwarding its own end-of-file after about 2 s; typed early on a loaded machine, the demo waited
 * forever.) Resolves when the demo has exited.
 */
function demoInTerminal(keys: string): Promise<{ status: number | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qec', `${process.execPath} ${MAIN} demo`, '/dev/null'], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let typed = false;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the demo still runs after ${PROCESS_DEADLINE_MS} ms; it printed ${JSON.stringify(stdout)}`));
    }, PROCESS_DEADLINE_MS);
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString('utf8');
      if (!typed && stdout.includes('Confirm? [y/N]')) {
        typed = true;
        child.stdin.write(keys);
      }
    });
    child.stdin.on('error', () => {});
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(new Error(`script(1) from util-linux is needed: ${e.message}`));
    });
    child.on('close', (status) => {
      clearTimeout(timer);
      child.stdin.destroy();
      resolve({ status, stdout });
    });
  });
}

describe('mcp-confirm --root DIR over stdio', () => {
  it('asks, then deletes on accept, with stdout carrying only the protocol', async () => {
    const { client, stderr } = await spawnServer(['--root', root]);
    const { state, message } = asked(await callTool(client, { name: 'delete_file', arguments: { path: 'cache.txt' } }));
    expect(message).toContain(join(root, 'cache.txt'));
    const done = await callTool(client, {
      name: 'delete_file',
      arguments: { path: 'cache.txt' },
      inputResponses: ACCEPT,
      requestState: state,
    });
    expect(done).toMatchObject({ kind: 'result', isError: false });
    expect(existsSync(join(root, 'cache.txt'))).toBe(false);
    const replay = await callTool(client, {
      name: 'delete_file',
      arguments: { path: 'thesis.txt' },
      inputResponses: ACCEPT,
      requestState: state,
    });
    expect(replay.kind === 'result' && replay.text.startsWith('[ERR_CONFIRM_MISMATCH]')).toBe(true);
    expect(existsSync(join(root, 'thesis.txt'))).toBe(true);
    await stderrSays(stderr, 'serving delete_file over stdio');
  });

  it('shares a key file between two processes: the state opens on the other, whose memory ledger says it is per process', async () => {
    const keyFile = join(R, 'keys.json');
    const keygen = await run(['keygen', '--kid', 'k1']);
    expect(keygen.status).toBe(0);
    writeFileSync(keyFile, keygen.stdout);
    const a = await spawnServer(['--root', root, '--key-file', keyFile]);
    const b = await spawnServer(['--root', root, '--key-file', keyFile]);
    const { state } = asked(await callTool(a.client, { name: 'delete_file', arguments: { path: 'cache.txt' } }));
    const onB = await callTool(b.client, {
      name: 'delete_file',
      arguments: { path: 'cache.txt' },
      inputResponses: ACCEPT,
      requestState: state,
    });
    expect(onB.kind === 'result' && onB.text.startsWith('[ERR_CONFIRM_UNKNOWN]')).toBe(true);
    if (onB.kind === 'result') expect(onB.text).toContain('shared ledger');
    expect(existsSync(join(root, 'cache.txt'))).toBe(true);
    // Control: without the shared key file, process B cannot even open the state.
    const c = await spawnServer(['--root', root]);
    expect(
      await callTool(c.client, {
        name: 'delete_file',
        arguments: { path: 'cache.txt' },
        inputResponses: ACCEPT,
        requestState: state,
      }),
    ).toMatchObject({
      kind: 'error',
      code: -32602,
    });
    // And on A it works.
    expect(
      await callTool(a.client, {
        name: 'delete_file',
        arguments: { path: 'cache.txt' },
        inputResponses: ACCEPT,
        requestState: state,
      }),
    ).toMatchObject({
      kind: 'result',
      isError: false,
    });
  });

  it("answers a 2026-07-28 client without the elicitation capability with -32021, its requiredCapabilities and this project's sentence (the stdio server that loads its layer lazily, as a host runs it); nothing is deleted", async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [MAIN, '--root', root],
      stderr: 'pipe',
    });
    const client = new Client(
      { name: 'cli-test-no-elicitation', version: '0.0.0' },
      { capabilities: {}, versionNegotiation: { mode: { pin: '2026-07-28' } }, inputRequired: { autoFulfill: false } },
    );
    await client.connect(transport);
    clients.push(client);
    expect(await callTool(client, { name: 'delete_file', arguments: { path: 'cache.txt' } })).toEqual({
      kind: 'error',
      code: -32021,
      message:
        '[ERR_CONFIRM_NO_ELICITATION] This tool needs a human confirmation, but the client did not declare the elicitation capability, so it cannot ask; nothing was done. With passkey approval, this server would instead answer with a link where a person approves the call with their passkey.',
      data: { requiredCapabilities: { elicitation: { form: {} } } },
    });
    expect(existsSync(join(root, 'cache.txt'))).toBe(true);
    // Control: the same command asks a client that declares elicitation.
    const { client: able } = await spawnServer(['--root', root]);
    expect((await callTool(able, { name: 'delete_file', arguments: { path: 'cache.txt' } })).kind).toBe(
      'input_required',
    );
    expect(existsSync(join(root, 'cache.txt'))).toBe(true);
  });
});

/** The trace of test/fixtures/loadTrace.mjs, split at the first answer: what was loaded before it, and after. */
function traceAtAnswer(file: string): { before: string[]; after: string[] } {
  const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean);
  const at = lines.indexOf('FIRST_ANSWER');
  if (at < 0) throw new Error(`${file} has no FIRST_ANSWER line: the process never answered`);
  return { before: lines.slice(0, at), after: lines.slice(at + 1) };
}

/** Spawns the built CLI under a `--import` fixture, with its environment variable, and connects a client. */
async function spawnWith(
  fixture: string,
  env: Record<string, string>,
  args: string[],
): Promise<{ client: Client; stderr: () => string }> {
  const transport = new InPlaceStdioTransport({
    command: process.execPath,
    args: ['--import', resolve(import.meta.dirname, `../fixtures/${fixture}`), MAIN, ...args],
    env: { ...process.env, ...env } as Record<string, string>,
    stderr: 'pipe',
  });
  let err = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString('utf8');
  });
  const client = new Client({ name: 'cli-test', version: '0.0.0' }, MANUAL_CLIENT_OPTIONS);
  await client.connect(transport); // resolved by the server's first answer (server/discover)
  clients.push(client);
  return { client, stderr: () => err };
}

/**
 * What `mcp-confirm --root DIR` must not have evaluated before its first answer: the confirmation
 * layer (guard, keys and sealer, ledgers, the renderer and its tables, the file checks, the tool's
 * rounds), the stores and their drivers, HTTP, JWT, metrics, WebAuthn, the audit trail, the proxy,
 * the demo, the MCP client, node:crypto.
 */
const NOT_BEFORE_FIRST_ANSWER =
  /\/dist\/guard\/(?!capabilityErrors\.js$)|\/dist\/(state|ledger|store|prompt|stores|audit|proxy)\/|\/dist\/http\/(?!bind\.js$)|\/dist\/approval\/(?!publicUrl\.js$)|\/dist\/demo\/(deleteFile|index)\.js$|\/dist\/fs\/(target|quarantine)\.js$|\/dist\/cli\/(demo|serveHttp|approvalStart|auditCli|ledgerSpec)\.js$|\/node_modules\/(better-sqlite3|redis|@redis|pg|pg-[a-z-]+|pgpass|jose|@simplewebauthn|prom-client|canonicalize)\/|@modelcontextprotocol\/client\/|^node:crypto$/;

describe('cold start', () => {
  it('answers the first request before loading the confirmation layer, the stores, their drivers, HTTP, JWT, metrics, WebAuthn, the demo or the MCP client; the first call loads the layer and is asked', async () => {
    const trace = join(R, 'loaded.txt');
    writeFileSync(trace, '');
    const { client } = await spawnWith('loadTrace.mjs', { MCP_CONFIRM_LOAD_TRACE: trace }, ['--root', root]);
    const { before } = traceAtAnswer(trace);
    // Not vacuous: the trace saw the entry and the tool's registration being loaded before the answer.
    expect(before.some((u) => u.endsWith('/dist/cli/main.js'))).toBe(true);
    expect(before.some((u) => u.endsWith('/dist/demo/deleteFileSpec.js'))).toBe(true);
    expect(before.filter((u) => NOT_BEFORE_FIRST_ANSWER.test(u))).toEqual([]);
    // Control: the first call loads the confirmation layer (after the answer) and is asked as always.
    const { message } = asked(await callTool(client, { name: 'delete_file', arguments: { path: 'cache.txt' } }));
    expect(message).toContain(join(root, 'cache.txt'));
    const { after } = traceAtAnswer(trace);
    for (const m of [
      '/dist/guard/confirmation.js',
      '/dist/demo/deleteFile.js',
      '/dist/state/sealer.js',
      '/dist/prompt/render.js',
    ]) {
      expect(
        after.some((u) => u.endsWith(m)),
        m,
      ).toBe(true);
    }
    // Without --approval passkey nothing loads the approval page or the WebAuthn library, not even the call.
    expect(
      [...before, ...after].filter((u) =>
        /\/dist\/approval\/(?!publicUrl\.js$)|\/node_modules\/@simplewebauthn\//.test(u),
      ),
    ).toEqual([]);
  });

  it('a store named by --ledger is loaded before the first answer (a bad one is exit 2): --ledger sqlite: loads the SQLite store', async () => {
    const trace = join(R, 'loaded-sqlite.txt');
    writeFileSync(trace, '');
    await spawnWith('loadTrace.mjs', { MCP_CONFIRM_LOAD_TRACE: trace }, [
      '--root',
      root,
      '--ledger',
      `sqlite:${join(R, 'ledger.sqlite')}`,
    ]);
    const { before } = traceAtAnswer(trace);
    expect(before.some((u) => u.endsWith('/dist/store/sqlite.js'))).toBe(true);
  });

  it("lists delete_file, announces itself and its capabilities exactly as the library's createDemoServer does", async () => {
    const cli = await spawnServer(['--root', root]);
    const library = await connect((await createDemoServer({ roots: [root] })).factory);
    try {
      expect((await cli.client.listTools()).tools).toEqual((await library.client.listTools()).tools);
      expect(cli.client.getServerVersion()).toEqual(library.client.getServerVersion());
      expect(cli.client.getServerCapabilities()).toEqual(library.client.getServerCapabilities());
      // Not vacuous: the schema is the full one.
      const [tool] = (await cli.client.listTools()).tools;
      expect(tool).toMatchObject({
        name: 'delete_file',
        inputSchema: { type: 'object', required: ['path'], additionalProperties: false },
      });
    } finally {
      await library.close();
    }
  });

  it('a confirmation layer that cannot be loaded: the call is answered with the internal error, nothing deleted, the reason on stderr, and the server keeps serving; control: the same call on a whole install is asked', async () => {
    const broken = await spawnWith('failLoad.mjs', { MCP_CONFIRM_FAIL_LOAD: '/dist/guard/confirmation.js' }, [
      '--root',
      root,
    ]);
    // The first answer and the tool list need no confirmation layer.
    expect((await broken.client.listTools()).tools.map((t) => t.name)).toEqual(['delete_file']);
    for (let i = 0; i < 2; i++) {
      const reply = await callTool(broken.client, { name: 'delete_file', arguments: { path: 'cache.txt' } });
      expect(reply).toMatchObject({
        kind: 'result',
        isError: true,
        text: 'Internal error in the confirmation layer; nothing was done.',
      });
    }
    // A requestState cannot be verified without the layer: refused as any unverifiable state.
    expect(
      await callTool(broken.client, {
        name: 'delete_file',
        arguments: { path: 'cache.txt' },
        inputResponses: ACCEPT,
        requestState: 'x.y.z',
      }),
    ).toMatchObject({
      kind: 'error',
      code: -32602,
    });
    expect(existsSync(join(root, 'cache.txt'))).toBe(true);
    await stderrSays(
      broken.stderr,
      'mcp-confirm: the confirmation layer could not be loaded: cannot load /dist/guard/confirmation.js (test fixture failLoad.mjs)',
    );
    expect((await broken.client.listTools()).tools.map((t) => t.name)).toEqual(['delete_file']);
    // Control: the same fixture failing a module nobody loads, and the call is asked.
    const whole = await spawnWith('failLoad.mjs', { MCP_CONFIRM_FAIL_LOAD: '/dist/no-such-module.js' }, [
      '--root',
      root,
    ]);
    asked(await callTool(whole.client, { name: 'delete_file', arguments: { path: 'cache.txt' } }));
  });
});

describe('exit codes and messages', () => {
  it('exits 2 naming an unknown option plainly, with a pointer to --help instead of the whole usage (server and proxy)', async () => {
    const r = await run(['--root', R, '--frobnicate']);
    expect(r.status).toBe(2);
    expect(r.stderr).toBe("mcp-confirm: unknown option --frobnicate\nRun 'mcp-confirm --help' for the usage.\n");
    const p = await run(['proxy', '--frobnicate', '--', process.execPath, '-e', '']);
    expect(p.status).toBe(2);
    expect(p.stderr).toBe('mcp-confirm: proxy: unknown option --frobnicate\n');
    // Control: a value missing after a known option keeps its own message.
    const missing = await run(['--root']);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain("Option '--root <value>' argument missing");
  });

  it('exits 2 with the usage when no --root is given', async () => {
    const r = await run([]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('at least one --root');
    expect(r.stderr).toContain('Usage:');
    expect(r.stdout).toBe('');
  });

  it.each([
    ['does not exist', () => join(R, 'missing')],
    ['is a file', () => join(root, 'cache.txt')],
    [
      'is a symbolic link',
      () => {
        symlinkSync(root, join(R, 'link'));
        return join(R, 'link');
      },
    ],
  ])('exits 2 naming a root that %s', async (_label, make) => {
    const bad = make();
    const r = await run(['--root', root, '--root', bad]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(bad);
    expect(r.stdout).toBe('');
  });

  it.each([['0'], ['-5'], ['abc'], ['1.5']])('exits 2 for --ttl %s', async (ttl) => {
    const r = await run(['--root', root, '--ttl', ttl]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('--ttl');
  });

  it('warns on stderr when the key file can be read by group or others (mode 0644), without echoing a key; control: mode 0600 serves without the warning', async () => {
    const keygen = await run(['keygen', '--kid', 'k1']);
    const key = (JSON.parse(keygen.stdout) as { keys: Array<{ k: string }> }).keys[0]!.k;
    const open = join(R, 'open-keys.json');
    writeFileSync(open, keygen.stdout, { mode: 0o644 });
    chmodSync(open, 0o644);
    const loose = await run(['--root', root, '--key-file', open]); // stdin closed at once: serves, then ends
    expect(loose.status).toBe(0);
    expect(loose.stderr).toContain(`warning: --key-file ${open} has mode 0644`);
    expect(loose.stderr).toContain('chmod 600');
    expect(loose.stderr).not.toContain(key);
    const tight = join(R, 'tight-keys.json');
    writeFileSync(tight, keygen.stdout, { mode: 0o600 });
    chmodSync(tight, 0o600);
    const ok = await run(['--root', root, '--key-file', tight]);
    expect(ok.status).toBe(0);
    expect(ok.stderr).toContain('serving');
    expect(ok.stderr).not.toContain('warning: --key-file');
  });

  it('exits 2 for a key file with a short key, without echoing the key', async () => {
    const keyFile = join(R, 'bad.json');
    writeFileSync(keyFile, JSON.stringify({ keys: [{ kid: 'k1', k: 'c2hvcnRrZXk' }] }));
    const r = await run(['--root', root, '--key-file', keyFile]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('32 bytes');
    expect(r.stderr).not.toContain('c2hvcnRrZXk');
  });

  it.each([
    ['keygen with an empty --kid', ['keygen', '--kid', ''], '--kid'],
    ['keygen with a --kid the key ring would refuse', ['keygen', '--kid', 'a"b'], '--kid'],
    ['--ttl over one day', ['--ttl', '86401'], '--ttl'],
    ['an --audience with braces', ['--audience', 'a{b}'], '--audience'],
    ['an unknown --ledger', ['--ledger', 'mongodb://x'], '--ledger'],
    [
      'a --ledger SQLite file in a missing directory',
      ['--ledger', 'sqlite:/nonexistent-dir/ledger.db'],
      'directory does not exist',
    ],
  ])('exits 2 for %s', async (_label, args, mentions) => {
    const r = await run(args[0] === 'keygen' ? args : ['--root', root, ...args]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(mentions);
    expect(r.stdout).toBe('');
  });

  it('exits 2 for a malformed redis:// URL without echoing its password', async () => {
    const r = await run(['--root', root, '--ledger', 'redis://:S3cretPw@localhost:notaport/0']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('--ledger');
    expect(r.stderr).not.toContain('S3cretPw');
  });

  it('exits 2 when Redis refuses the connection (database out of range), naming the reason', async () => {
    const url = process.env.REDIS_URL;
    if (!url) throw new Error('REDIS_URL is not set: the test command starts a redis-server and sets it');
    const r = await run(['--root', root, '--ledger', `${url}/99`]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('DB index is out of range');
    expect(r.stderr).not.toContain('retrying'); // one refusal, not "retrying" and then an exit
  });

  it('exits 2 for an unknown option', async () => {
    const r = await run(['--root', root, '--force']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('--force');
  });

  it('--version prints the version in package.json and exits 0, with nothing on stderr', async () => {
    const { version } = JSON.parse(readFileSync(resolve(import.meta.dirname, '../../package.json'), 'utf8')) as {
      version: string;
    };
    const r = await run(['--version']);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(`${version}\n`);
    expect(r.stderr).toBe('');
    // Control: a misspelt --version is still an unknown option.
    const bad = await run(['--versoin']);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('--versoin');
  });
});

describe('mcp-confirm demo', () => {
  it('without a terminal and without --yes says so and exits 2', async () => {
    const r = await run(['demo']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('--yes');
  });

  it.each([
    ['answering n', 'n\n'],
    ['ending input with Ctrl-D', '\u0004'],
  ])('in a terminal, %s deletes nothing, still refuses the attacks and exits 0', async (_label, input) => {
    const r = await demoInTerminal(input);
    expect(r.status, r.stdout).toBe(0);
    expect(r.stdout).toContain('Confirm? [y/N]');
    expect(r.stdout).toContain('You did not confirm; nothing was deleted.');
    expect(r.stdout).toContain('cache.txt is still there.');
    expect(r.stdout).toContain('[ERR_CONFIRM_SPENT]');
    expect(r.stdout).toContain('thesis.txt is intact.');
  });

  it('with --yes deletes cache.txt, refuses the three attacks and ends with thesis.txt intact', async () => {
    const child = spawn(process.execPath, [MAIN, 'demo', '--yes'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
    const status = await new Promise<number | null>((res) => child.on('close', res));
    expect(status).toBe(0);
    expect(out).toContain('Permanently delete the file');
    expect(out).toMatch(/Deleted .*cache\.txt/);
    expect(out).toContain('[ERR_CONFIRM_SPENT]');
    expect(out).toContain('[ERR_CONFIRM_MISMATCH]');
    expect(out).toContain('-32602');
    expect(out.trimEnd().split('\n').at(-1)).toBe('thesis.txt is intact.');
  });
});

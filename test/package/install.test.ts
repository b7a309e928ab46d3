/**
 * The package as a user installs it (issue 20 part 5): packed from a copy of the sources, as on a
 * fresh clone (so `prepack` builds `dist/` from scratch), installed from the tarball into a fresh
 * project that has none of the optional peers, then with each of them.
 *
 * Time and the drivers: better-sqlite3 compiles from source for 3 to 7 minutes on CI's 2 cores, so
 * no driver is compiled here. The peers are installed from the copies the repository's own `npm ci`
 * built: `npm install <folder>` links the folder (it resolves its own dependencies from the
 * repository's `node_modules`), always with `--ignore-scripts`, or npm would run better-sqlite3's
 * install script in the linked folder, rebuilding the repository's copy. Everything else comes from
 * the registry through one npm cache, in the one temporary folder this file uses for everything
 * (prefer-offline: once a package is in that cache, it is not fetched again).
 */
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, delimiter, join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCEPT, asked, callTool, MANUAL_CLIENT_OPTIONS } from '../helpers/harness.js';
import { InPlaceStdioTransport, runProcess, stderrSays, type Finished } from '../helpers/processes.js';

const REPO = resolve(import.meta.dirname, '../..');
const { version: VERSION } = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string };
/** What `npm pack` needs to build the package: the sources and the build's configuration. */
const SOURCES = ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'README.md', 'LICENSE', 'src', 'scripts'];

/** The one temporary folder: the sources' copy, the tarball, the npm cache, the project. */
let T: string;
/** The fresh project the tarball is installed into. */
let app: string;
/** The packed tarball's path. */
let tarball: string;
/** The files `npm pack` put in the tarball. */
let packed: string[];
/** The environment of every npm and CLI process: the test's, without npm's own variables, with one cache. */
let env: Record<string, string>;

/** How long one npm command may take: it fetches packages, on a machine shared with other tests. */
const NPM_DEADLINE_MS = 5 * 60_000;

function npm(args: string[], cwd: string): Promise<Finished> {
  return runProcess('npm', args, { cwd, env, deadlineMs: NPM_DEADLINE_MS });
}

async function npmOk(args: string[], cwd: string): Promise<Finished> {
  const r = await npm(args, cwd);
  if (r.status !== 0) throw new Error(`npm ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return r;
}

/** The installed CLI of the project (its `node_modules/.bin` link). */
function bin(): string {
  return join(app, 'node_modules', '.bin', 'mcp-confirm');
}

/** Runs an ES module given as text in the project, as a user's script there would run. */
async function script(code: string): Promise<unknown> {
  const r = await runProcess(process.execPath, ['--input-type=module', '-e', code], { cwd: app, env });
  if (r.status !== 0) throw new Error(`script exited ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

/** Every client this file connected, closed at the end (their servers exit with them). */
const clients: Client[] = [];

/** A real client pinned to 2026-07-28, driving the rounds by hand, of `command args` started over stdio in `cwd`. */
async function stdioClient(
  command: string,
  args: string[],
  cwd: string,
): Promise<{ client: Client; stderr: () => string }> {
  const transport = new InPlaceStdioTransport({ command, args, cwd, env, stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const client = new Client({ name: 'package-test', version: '0.0.0' }, MANUAL_CLIENT_OPTIONS);
  await client.connect(transport);
  clients.push(client);
  return { client, stderr: () => stderr };
}

/**
 * Starts `command args --root ROOT` (a fresh root holding `old.log`) as an MCP server over stdio and
 * deletes `old.log` through a real client pinned to 2026-07-28: round 1 asks, round 2 says yes.
 * Returns the result's text and what the server wrote on stderr.
 */
async function confirmedDelete(command: string, args: string[]): Promise<{ text: string; stderr: string }> {
  const root = mkdtempSync(join(T, 'root-'));
  const file = join(root, 'old.log');
  writeFileSync(file, 'hello');
  const { client, stderr } = await stdioClient(command, [...args, '--root', root], T);
  const { state, message } = asked(await callTool(client, { name: 'delete_file', arguments: { path: 'old.log' } }));
  expect(message).toContain(file);
  expect(existsSync(file)).toBe(true);
  const done = await callTool(client, {
    name: 'delete_file',
    arguments: { path: 'old.log' },
    inputResponses: ACCEPT,
    requestState: state,
  });
  if (done.kind !== 'result') throw new Error(`expected a result, got ${JSON.stringify(done)}`);
  expect(done.isError).toBe(false);
  expect(existsSync(file)).toBe(false);
  return { text: done.text, stderr: stderr() };
}

beforeAll(async () => {
  T = mkdtempSync(join(tmpdir(), 'mcp-confirm-package-'));
  env = Object.fromEntries(
    Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined && !/^npm_/i.test(e[0])),
  );
  Object.assign(env, {
    npm_config_cache: join(T, 'npm-cache'),
    npm_config_prefer_offline: 'true',
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
  });

  // A copy of the sources as a fresh clone has them: no dist/ of the repository's; one stale module
  // in a dist/ of its own, which prepack's clean build must not ship. The build's tools come from
  // the repository's node_modules.
  const source = join(T, 'source');
  for (const entry of SOURCES) cpSync(join(REPO, entry), join(source, entry), { recursive: true });
  symlinkSync(join(REPO, 'node_modules'), join(source, 'node_modules'), 'dir');
  mkdirSync(join(source, 'dist'));
  writeFileSync(join(source, 'dist', 'stale.js'), 'export {};\n');
  const pack = await npmOk(['pack', '--json', '--pack-destination', T], source);
  const [info] = JSON.parse(pack.stdout) as { filename: string; files: { path: string }[] }[];
  tarball = join(T, info!.filename);
  packed = info!.files.map((f) => f.path);

  app = join(T, 'app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }, null, 2));
  await npmOk(['install', tarball], app);
}, 2 * NPM_DEADLINE_MS);

afterAll(async () => {
  for (const client of clients) await client.close().catch(() => {});
  if (T) rmSync(T, { recursive: true, force: true });
});

describe('the packed package', () => {
  it(`is mcp-confirm-${VERSION}.tgz and ships dist/ (built by prepack, without source maps or stale modules), README.md, LICENSE and package.json only`, () => {
    expect(tarball.endsWith(`mcp-confirm-${VERSION}.tgz`)).toBe(true);
    const outside = packed.filter(
      (p) => !p.startsWith('dist/') && !['README.md', 'LICENSE', 'package.json'].includes(p),
    );
    expect(outside).toEqual([]);
    expect(packed.filter((p) => p.endsWith('.map') || p === 'dist/stale.js')).toEqual([]);
    expect(packed).toContain('LICENSE');
    // Every target of the exports map and the bin is in it.
    const manifest = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
      exports: Record<string, string | Record<string, string>>;
      bin: Record<string, string>;
    };
    const targets = [
      ...Object.values(manifest.exports).flatMap((t) => (typeof t === 'string' ? [t] : Object.values(t))),
      ...Object.values(manifest.bin),
    ].map((t) => t.replace(/^\.\//, ''));
    expect(targets.length).toBeGreaterThan(10);
    expect(targets.filter((t) => !packed.includes(t))).toEqual([]);
  });

  it('installs without its optional peers: neither better-sqlite3 nor redis is in the project', () => {
    expect(existsSync(join(app, 'node_modules', 'mcp-confirm', 'dist', 'index.js'))).toBe(true);
    for (const peer of ['better-sqlite3', 'redis', '@redis', 'bindings', 'prebuild-install']) {
      expect(existsSync(join(app, 'node_modules', peer)), peer).toBe(false);
    }
  });

  it('imports the root and every subpath from the installed package, the stores without their drivers too', async () => {
    const got = await script(`
      const root = await import('mcp-confirm');
      const http = await import('mcp-confirm/http');
      const approval = await import('mcp-confirm/approval');
      const demo = await import('mcp-confirm/demo');
      const sqlite = await import('mcp-confirm/stores/sqlite');
      const redis = await import('mcp-confirm/stores/redis');
      const { version } = (await import('mcp-confirm/package.json', { with: { type: 'json' } })).default;
      console.log(JSON.stringify({
        createConfirmation: typeof root.createConfirmation,
        MemoryLedger: typeof root.MemoryLedger,
        http: Object.keys(http).length > 0,
        approval: Object.keys(approval).length > 0,
        demo: demo.SERVER_INFO,
        SqliteLedger: typeof sqlite.SqliteLedger,
        RedisLedger: typeof redis.RedisLedger,
        version,
      }));
    `);
    expect(got).toEqual({
      createConfirmation: 'function',
      MemoryLedger: 'function',
      http: true,
      approval: true,
      demo: { name: 'mcp-confirm', version: VERSION },
      SqliteLedger: 'function',
      RedisLedger: 'function',
      version: VERSION,
    });
  });

  it(`runs mcp-confirm --version (${VERSION}) and the demo from the installed bin`, async () => {
    const v = await runProcess(bin(), ['--version'], { cwd: app, env });
    expect(v).toMatchObject({ status: 0, stdout: `${VERSION}\n` });
    const demo = await runProcess(bin(), ['demo', '--yes'], { cwd: app, env });
    expect(demo.status).toBe(0);
    expect(demo.stdout + demo.stderr).toMatch(/deleted/i);
  });

  it('serves the demo server over stdio: a real client confirms a delete through the installed bin', async () => {
    const { text } = await confirmedDelete(bin(), []);
    expect(text).toContain('old.log');
  });

  it('runs from the tarball with npx -y ./mcp-confirm-VERSION.tgz --root DIR: a real client confirms a delete', async () => {
    // As the docs say it: a path starting with ./ (npx runs an absolute path as a command), from its folder.
    const { text } = await confirmedDelete('npx', ['-y', `./${basename(tarball)}`]);
    expect(text).toContain('old.log');
  });
});

describe('a store without its driver', () => {
  it('refuses new SqliteLedger and RedisLedger (url) with ERR_CONFIG_STORE_DRIVER naming the package, creating nothing', async () => {
    const path = join(T, 'no-driver.db');
    const got = await script(`
      import { ConfigError } from 'mcp-confirm';
      import { SqliteLedger } from 'mcp-confirm/stores/sqlite';
      import { RedisLedger } from 'mcp-confirm/stores/redis';
      const out = [];
      for (const use of [
        () => new SqliteLedger({ path: ${JSON.stringify(path)} }),
        () => new RedisLedger({ url: 'redis://127.0.0.1:6379/0' }),
        () => RedisLedger.open({ url: 'redis://127.0.0.1:6379/0' }),
      ]) {
        try {
          await use();
          out.push('no refusal');
        } catch (e) {
          out.push({ configError: e instanceof ConfigError, code: e.code, value: e.value, message: e.message });
        }
      }
      console.log(JSON.stringify(out));
    `);
    const refusal = (store: string, pkg: string) => ({
      configError: true,
      code: 'ERR_CONFIG_STORE_DRIVER',
      value: pkg,
      message: `the ${store} store needs the package ${pkg}, which is not installed: install it next to mcp-confirm (npm install ${pkg})`,
    });
    expect(got).toEqual([refusal('SQLite', 'better-sqlite3'), refusal('Redis', 'redis'), refusal('Redis', 'redis')]);
    expect(existsSync(path)).toBe(false);
  });

  it('the CLI: --ledger sqlite:PATH and redis://… exit 2 with one line naming the package and how to add it, the password never shown', async () => {
    const root = mkdtempSync(join(T, 'root-'));
    const path = join(T, 'cli-no-driver.db');
    const sqlite = await runProcess(bin(), ['--root', root, '--ledger', `sqlite:${path}`], { cwd: app, env });
    expect(sqlite).toMatchObject({
      status: 2,
      stdout: '',
      stderr: `mcp-confirm: --ledger sqlite:${path}: the SQLite store needs the package better-sqlite3, which is not installed: install it next to mcp-confirm (npm install -g mcp-confirm better-sqlite3, or npx -p mcp-confirm -p better-sqlite3 mcp-confirm …)\n`,
    });
    expect(existsSync(path)).toBe(false);
    const redis = await runProcess(bin(), ['--root', root, '--ledger', 'redis://me:s3cret@127.0.0.1:6379/0'], {
      cwd: app,
      env,
    });
    expect(redis).toMatchObject({
      status: 2,
      stdout: '',
      stderr: `mcp-confirm: --ledger redis://127.0.0.1:6379/0: the Redis store needs the package redis, which is not installed: install it next to mcp-confirm (npm install -g mcp-confirm redis, or npx -p mcp-confirm -p redis mcp-confirm …)\n`,
    });
  });
});

describe('with each driver installed', () => {
  beforeAll(async () => {
    // Links to the repository's built copies; --ignore-scripts, or npm rebuilds better-sqlite3 in place.
    await npmOk(
      [
        'install',
        '--ignore-scripts',
        join(REPO, 'node_modules', 'better-sqlite3'),
        join(REPO, 'node_modules', 'redis'),
      ],
      app,
    );
  });

  it('mcp-confirm/stores/sqlite: a SqliteLedger issues and spends once in a file', async () => {
    const path = join(T, 'ledger.db');
    const got = await script(`
      import { SqliteLedger } from 'mcp-confirm/stores/sqlite';
      const ledger = new SqliteLedger({ path: ${JSON.stringify(path)} });
      const now = Date.now();
      await ledger.issue('jti-1', 'local', now + 60_000);
      const first = await ledger.spend('jti-1', now);
      const second = await ledger.spend('jti-1', now);
      await ledger.close();
      console.log(JSON.stringify([first, second]));
    `);
    expect(got).toEqual(['spent', 'already-spent']);
    expect(existsSync(path)).toBe(true);
  });

  it('mcp-confirm/stores/redis: a RedisLedger issues and spends once in Redis', async () => {
    const url = process.env.REDIS_URL;
    if (!url) throw new Error('REDIS_URL is not set: the test command starts a Redis (scripts/start-redis.sh)');
    const got = await script(`
      import { RedisLedger } from 'mcp-confirm/stores/redis';
      const ledger = await RedisLedger.open({ url: ${JSON.stringify(url)}, namespace: 'package-test-${process.pid}-${Date.now()}' });
      const now = Date.now();
      await ledger.issue('jti-1', 'local', now + 60_000);
      const first = await ledger.spend('jti-1', now);
      const second = await ledger.spend('jti-1', now);
      await ledger.close();
      console.log(JSON.stringify([first, second]));
    `);
    expect(got).toEqual(['spent', 'already-spent']);
  });

  it('the CLI with --ledger sqlite:PATH: a real client confirms a delete', async () => {
    const path = join(T, 'cli-ledger.db');
    const { stderr } = await confirmedDelete(bin(), ['--ledger', `sqlite:${path}`]);
    expect(stderr).toContain('; ledger sqlite');
    expect(existsSync(path)).toBe(true);
  });

  it('installed globally with its driver (npm install -g mcp-confirm better-sqlite3): --ledger sqlite:PATH confirms a delete', async () => {
    const prefix = join(T, 'global');
    await npmOk(
      ['install', '-g', '--prefix', prefix, '--ignore-scripts', tarball, join(REPO, 'node_modules', 'better-sqlite3')],
      T,
    );
    const path = join(T, 'global-ledger.db');
    const { stderr } = await confirmedDelete(join(prefix, 'bin', 'mcp-confirm'), ['--ledger', `sqlite:${path}`]);
    expect(stderr).toContain('; ledger sqlite');
    expect(existsSync(path)).toBe(true);
  });
});

describe('examples/, installed from the same tarball into the same project', () => {
  const EXAMPLES = join(REPO, 'examples');
  const NAMES = ['transfer-money', 'proxy-filesystem', 'http-tokens'];
  /** Files a run of an example leaves in its folder, never copied. */
  const LEFT_BY_A_RUN = /[/\\](node_modules|package-lock\.json|ledger\.db.*|signing-key\.json|jwks\.json|files)$/;

  /** The example's copy, under the project: it resolves the project's node_modules. */
  const folder = (name: string): string => join(app, 'examples', name);

  /** The words of the example's `npm start`: a bin of the project (or node), and its arguments. */
  function start(name: string): [string, string[]] {
    const { scripts } = JSON.parse(readFileSync(join(EXAMPLES, name, 'package.json'), 'utf8')) as {
      scripts: { start: string };
    };
    const [first, ...args] = scripts.start.split(' ');
    return [first === 'node' ? process.execPath : join(app, 'node_modules', '.bin', first!), args];
  }

  beforeAll(async () => {
    for (const name of NAMES) {
      cpSync(join(EXAMPLES, name), folder(name), { recursive: true, filter: (src) => !LEFT_BY_A_RUN.test(src) });
    }
    // What the examples need besides mcp-confirm's own dependencies, linked from the repository's
    // built copies (--ignore-scripts: see the top of this file); `npm start` puts the project's bins
    // on PATH, as the proxy example's upstream command needs.
    await npmOk(
      [
        'install',
        '--ignore-scripts',
        join(REPO, 'node_modules', 'better-sqlite3'),
        join(REPO, 'node_modules', '@modelcontextprotocol', 'server-filesystem'),
      ],
      app,
    );
    env.PATH = `${join(app, 'node_modules', '.bin')}${delimiter}${env.PATH ?? ''}`;
  }, NPM_DEADLINE_MS);

  it('each has a README and a package.json installing mcp-confirm from the packed tarball, with the versions installed here', () => {
    for (const name of NAMES) {
      expect(existsSync(join(EXAMPLES, name, 'README.md')), name).toBe(true);
      const { dependencies } = JSON.parse(readFileSync(join(EXAMPLES, name, 'package.json'), 'utf8')) as {
        dependencies: Record<string, string>;
      };
      expect(dependencies['mcp-confirm'], name).toBe(`file:../../mcp-confirm-${VERSION}.tgz`);
      const others = Object.entries(dependencies).filter(([dep]) => dep !== 'mcp-confirm');
      expect(others.length, name).toBeGreaterThan(0);
      for (const [dep, spec] of others) {
        const installed = JSON.parse(readFileSync(join(app, 'node_modules', dep, 'package.json'), 'utf8')) as {
          version: string;
        };
        expect(`${name}: ${dep} ${installed.version}`).toBe(`${name}: ${dep} ${spec}`);
      }
    }
  });

  it('transfer-money: a real client confirms a transfer over stdio; the replay is spent in the SQLite ledger; a transfer beyond the balance is refused before asking', async () => {
    const [command, args] = start('transfer-money');
    const { client } = await stdioClient(command, args, folder('transfer-money'));
    const call = { name: 'transfer_money', arguments: { from: 'alice', to: 'bob', amountCents: 2_500 } };
    const { state, message } = asked(await callTool(client, call));
    expect(message).toContain('25.00 EUR');
    expect(message).toContain('100.00 EUR');
    const done = await callTool(client, { ...call, inputResponses: ACCEPT, requestState: state });
    expect(done).toMatchObject({
      kind: 'result',
      isError: false,
      text: 'Transferred 25.00 EUR from alice to bob; alice now has 75.00 EUR.',
    });
    const replay = await callTool(client, { ...call, inputResponses: ACCEPT, requestState: state });
    expect(replay.kind === 'result' && replay.text.startsWith('[ERR_CONFIRM_SPENT]')).toBe(true);
    expect(existsSync(join(folder('transfer-money'), 'ledger.db'))).toBe(true);
    const tooMuch = await callTool(client, {
      name: 'transfer_money',
      arguments: { from: 'bob', to: 'alice', amountCents: 1_000_000 },
    });
    expect(tooMuch.kind === 'result' && tooMuch.text.startsWith('[ERR_TRANSFER_FUNDS] insufficient funds')).toBe(true);
  });

  it('proxy-filesystem: reading passes without a question; write_file is asked and written once after a yes', async () => {
    const sandbox = join(folder('proxy-filesystem'), 'sandbox');
    const [command, args] = start('proxy-filesystem');
    const { client } = await stdioClient(command, args, folder('proxy-filesystem'));
    const read = await callTool(client, { name: 'read_text_file', arguments: { path: join(sandbox, 'notes.txt') } });
    expect(read).toMatchObject({ kind: 'result', isError: false });
    expect(read.kind === 'result' && read.text).toContain('A note the agent may read');
    const hello = join(sandbox, 'hello.txt');
    const write = { name: 'write_file', arguments: { path: hello, content: 'hello' } };
    const { state, message } = asked(await callTool(client, write));
    expect(message).toContain('write_file');
    expect(existsSync(hello)).toBe(false);
    const done = await callTool(client, { ...write, inputResponses: ACCEPT, requestState: state });
    expect(done).toMatchObject({ kind: 'result', isError: false });
    expect(readFileSync(hello, 'utf8')).toBe('hello');
  });

  it('http-tokens: setup.js, the server with tokens from the local JWK set, and client.js, which deletes the file after a yes; no token, no call', async () => {
    const cwd = folder('http-tokens');
    expect(await runProcess(process.execPath, ['setup.js'], { cwd, env })).toMatchObject({ status: 0 });
    expect(existsSync(join(cwd, 'files', 'report.txt'))).toBe(true);
    // `npm start` on a free port instead of 8787 (tests run side by side).
    const [command, args] = start('http-tokens');
    const server = spawn(
      command,
      args.map((a) => a.replace('127.0.0.1:8787', '127.0.0.1:0')),
      { cwd, env, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    server.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    try {
      await stderrSays(() => stderr, '/mcp;');
      const url = / at (http:\/\/\S+\/mcp);/.exec(stderr)![1]!;
      const anonymous = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
      });
      expect(anonymous.status).toBe(401);
      const client = await runProcess(process.execPath, ['client.js', url], { cwd, env });
      expect(client).toMatchObject({ status: 0 });
      expect(client.stdout).toMatch(/^asked: Permanently delete .*report\.txt/m);
      expect(client.stdout).toMatch(/^Deleted .*report\.txt/m);
      expect(existsSync(join(cwd, 'files', 'report.txt'))).toBe(false);
    } finally {
      server.kill();
    }
  });
});

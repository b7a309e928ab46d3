/**
 * `mcp-confirm proxy --explain` and the proxy's start-up tools line, in front of real upstreams:
 * `@modelcontextprotocol/server-filesystem` (annotated: read-only, destructive, not destructive)
 * and fixtures/bareUpstream.mjs (tools without annotations or hints). What --explain says is checked
 * against what the proxy then does when serving (a real v2 client pinned to 2026-07-28, rounds by
 * hand). Needs `npm run build` first.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { asked } from '../helpers/harness.js';
import { liveProcessesMentioning, until } from '../helpers/processes.js';
import { resultText, runProxy, startStdioProxy, useProxyRoot, type Closers } from '../helpers/proxyProcess.js';

const FS_SERVER = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-filesystem/dist/index.js');
const BARE_UPSTREAM = resolve(import.meta.dirname, 'fixtures/bareUpstream.mjs');

const closers: Closers = [];
const testRoot = useProxyRoot('proxyexplain', closers);

/** A fresh directory with a unique name (for the upstream to serve, and to find its processes by). */
const freshDir = (kind: string) => mkdtempSync(join(testRoot(), `${kind}-`));

/** A policy file in a fresh directory. */
function policyFile(policy: unknown): string {
  const path = join(freshDir('policy'), 'policy.json');
  writeFileSync(path, JSON.stringify(policy));
  return path;
}

const POLICY = {
  deny: ['move_*'],
  confirm: ['create_directory'],
  allow: ['write_file'],
  grants: { edit_file: { arguments: { path: 'same-directory' } } },
};

/** The report's line for `tool`: `[action, why]`. */
function lineOf(stdout: string, tool: string): [string, string] {
  const line = stdout.split('\n').find((l) => l.includes(`\`${tool}\` `));
  if (line === undefined) throw new Error(`no line for ${tool} in ${stdout}`);
  const m = /^(ask|pass|deny) +`[^`]+` +(.*)$/.exec(line);
  if (!m) throw new Error(`malformed line ${JSON.stringify(line)}`);
  return [m[1]!, m[2]!];
}

describe('mcp-confirm proxy --explain', () => {
  it('lists every tool of server-filesystem with ask/pass/deny and why, exits 0 without serving, and leaves no upstream running', async () => {
    const root = freshDir('fs');
    const r = await runProxy([
      '--explain',
      '--plans',
      '--policy',
      policyFile(POLICY),
      process.execPath,
      FS_SERVER,
      root,
    ]);
    expect(r.status).toBe(0);
    expect(r.stderr).not.toContain('serving');
    expect(r.stdout.split('\n')[0]).toBe('`secure-filesystem-server` `0.2.0`: 15 tools (3 ask, 11 pass, 1 deny)');
    // The policy's entries, by list and index.
    expect(lineOf(r.stdout, 'move_file')).toEqual(['deny', 'policy deny[0] "move_*"']);
    expect(lineOf(r.stdout, 'create_directory')).toEqual(['ask', 'policy confirm[0] "create_directory"']);
    expect(lineOf(r.stdout, 'write_file')).toEqual(['pass', 'policy allow[0] "write_file"']);
    // Not named: the upstream's annotations.
    expect(lineOf(r.stdout, 'edit_file')).toEqual([
      'ask',
      'not in the policy; annotation destructiveHint: true; offers a grant (policy grants)',
    ]);
    expect(lineOf(r.stdout, 'read_text_file')).toEqual(['pass', 'not in the policy; annotation readOnlyHint: true']);
    // --plans: the proxy's own tool.
    expect(lineOf(r.stdout, 'confirm_plan')[0]).toBe('ask');
    // Fourteen upstream tools, each on its own line, and the plans tool.
    expect(r.stdout.trimEnd().split('\n')).toHaveLength(1 + 15);
    await until(() => liveProcessesMentioning(root).length === 0);
  });

  it('says "no annotations" for a tool without any, "asked by default" for hints left out, and --confirm-unnamed for every unnamed tool with it', async () => {
    const bare = await runProxy(['--explain', process.execPath, BARE_UPSTREAM]);
    expect(bare.status).toBe(0);
    expect(bare.stdout.split('\n')[0]).toBe('`bare-upstream` `1.0.0`: 3 tools (2 ask, 1 pass, 0 deny)');
    expect(lineOf(bare.stdout, 'plain')).toEqual([
      'ask',
      'not in the policy; no annotations, so the spec defaults apply (destructiveHint true): asked by default',
    ]);
    expect(lineOf(bare.stdout, 'vague')).toEqual([
      'ask',
      'not in the policy; annotations say neither readOnlyHint: true nor destructiveHint: false: asked by default',
    ]);
    expect(lineOf(bare.stdout, 'lookup')).toEqual(['pass', 'not in the policy; annotation readOnlyHint: true']);
    const all = await runProxy(['--explain', '--confirm-unnamed', process.execPath, BARE_UPSTREAM]);
    expect(all.status).toBe(0);
    expect(lineOf(all.stdout, 'lookup')).toEqual(['ask', 'not in the policy; --confirm-unnamed asks every such tool']);
    // Served, the unannotated tool is asked and the read-only one passes, as explained.
    const { call } = await startStdioProxy([process.execPath, BARE_UPSTREAM], { name: 'proxy-explain-bare', closers });
    asked(await call('plain', {}));
    asked(await call('vague', {}));
    expect(resultText(await call('lookup', {}))).toBe('lookup');
  });

  it('exits 1 with nothing on stdout when the upstream cannot start, and 2 for a bad policy', async () => {
    const missing = await runProxy(['--explain', join(freshDir('none'), 'no-such-server')]);
    expect(missing.status).toBe(1);
    expect(missing.stdout).toBe('');
    const bad = await runProxy(['--explain', '--policy', policyFile({ deny: 'x' }), process.execPath, FS_SERVER]);
    expect(bad.status).toBe(2);
    expect(bad.stdout).toBe('');
    expect(bad.stderr).toContain('deny must be an array');
  });
});

describe("the proxy's start-up line, and serving does what --explain says", () => {
  it('lists each tool with ask/pass/deny and why on stderr before serving; the calls then go as it said', async () => {
    const root = freshDir('fs');
    const policy = policyFile(POLICY);
    const explained = await runProxy(['--explain', '--policy', policy, process.execPath, FS_SERVER, root]);
    expect(explained.status).toBe(0);
    const { call, stderr } = await startStdioProxy(['--policy', policy, process.execPath, FS_SERVER, root], {
      name: 'proxy-explain-test',
      closers,
    });
    await until(() => stderr().includes('serving'));
    const line = stderr()
      .split('\n')
      .find((l) => l.startsWith('mcp-confirm proxy: tools as listed at start-up: '));
    expect(line).toBeDefined();
    expect(line).toContain('ask 2: ');
    expect(line).toContain('`create_directory` (confirm[0] "create_directory")');
    expect(line).toContain('`edit_file` (destructiveHint: true; offers a grant (policy grants))');
    expect(line).toContain('pass 11: ');
    expect(line).toContain('`write_file` (allow[0] "write_file")');
    expect(line).toContain('`read_text_file` (readOnlyHint: true)');
    expect(line).toContain('deny 1: `move_file` (deny[0] "move_*")');
    // Before the serving line.
    expect(stderr().indexOf('tools as listed at start-up')).toBeLessThan(stderr().indexOf('serving'));

    // deny: refused, nothing forwarded.
    writeFileSync(join(root, 'a.txt'), 'a');
    expect(lineOf(explained.stdout, 'move_file')[0]).toBe('deny');
    expect(
      resultText(await call('move_file', { source: join(root, 'a.txt'), destination: join(root, 'b.txt') })),
    ).toMatch(/^\[ERR_CONFIRM_POLICY_DENIED\]/);
    // ask: a question, nothing done yet.
    expect(lineOf(explained.stdout, 'create_directory')[0]).toBe('ask');
    asked(await call('create_directory', { path: join(root, 'made') }));
    // pass: forwarded without a question.
    expect(lineOf(explained.stdout, 'write_file')[0]).toBe('pass');
    expect(resultText(await call('write_file', { path: join(root, 'w.txt'), content: 'w' }))).toContain('w.txt');
    expect(lineOf(explained.stdout, 'read_text_file')[0]).toBe('pass');
    expect(resultText(await call('read_text_file', { path: join(root, 'a.txt') }))).toBe('a');
  });
});

/**
 * Shell blocks the docs mark as runnable are run (issue 20 part 7): a ```sh block right after a line
 * `<!-- runnable -->` in README.md or docs/*.md runs with `bash -euo pipefail` in a fresh temporary
 * directory (also its HOME), with `mcp-confirm` on PATH being the built CLI (`dist/cli/main.js`: run
 * `npm run build` first), and must exit 0.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PROCESS_DEADLINE_MS } from './helpers/deadlines.js';
import { markdownFilesUnder } from './helpers/markdownLinks.js';

const REPO = join(import.meta.dirname, '..');
const MAIN = join(REPO, 'dist', 'cli', 'main.js');
const MARK = '<!-- runnable -->';

interface RunnableBlock {
  file: string;
  /** 1-based line of the block's opening fence. */
  line: number;
  code: string;
}

/** The ```sh blocks of a markdown text whose fence follows a `<!-- runnable -->` line. */
function runnableBlocks(file: string, text: string): RunnableBlock[] {
  const lines = text.split('\n');
  const blocks: RunnableBlock[] = [];
  for (let i = 1; i < lines.length; i++) {
    if (lines[i] !== '```sh' || lines[i - 1]!.trim() !== MARK) continue;
    const end = lines.indexOf('```', i + 1);
    if (end < 0) throw new Error(`${file}:${i + 1}: a runnable block is never closed`);
    blocks.push({ file, line: i + 1, code: lines.slice(i + 1, end).join('\n') });
  }
  return blocks;
}

const scratch = mkdtempSync(join(tmpdir(), 'mcp-confirm-runnable-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const bin = join(scratch, 'bin');
spawnSync('mkdir', ['-p', bin]);
writeFileSync(join(bin, 'mcp-confirm'), `#!/bin/sh\nexec "${process.execPath}" "${MAIN}" "$@"\n`);
chmodSync(join(bin, 'mcp-confirm'), 0o755);

/** Runs one block; returns what a failure message needs. */
function run(block: RunnableBlock): { status: number | null; output: string } {
  const cwd = mkdtempSync(join(scratch, 'block-'));
  const result = spawnSync('bash', ['-euo', 'pipefail', '-c', block.code], {
    cwd,
    env: { ...process.env, HOME: cwd, PATH: `${bin}${delimiter}${process.env.PATH ?? ''}` },
    encoding: 'utf8',
    timeout: PROCESS_DEADLINE_MS,
  });
  return { status: result.status, output: `${result.stdout}\n${result.stderr}`.trim() };
}

const files = ['README.md', ...markdownFilesUnder(REPO, 'docs').filter((f) => f.split('/').length === 2)];
const blocks = files.flatMap((file) => runnableBlocks(file, readFileSync(join(REPO, file), 'utf8')));

describe('runnable shell blocks in the docs', () => {
  it('the docs mark at least one block as runnable', () => {
    expect(blocks.length).toBeGreaterThan(0);
  });

  for (const block of blocks) {
    it(`${block.file}:${block.line} exits 0`, () => {
      const { status, output } = run(block);
      expect(status, `${block.file}:${block.line} exited ${status}:\n${output}`).toBe(0);
    });
  }

  it('control: a runnable block that fails is reported with its file and line', () => {
    const [block] = runnableBlocks(
      'fixture.md',
      ['text', MARK, '```sh', 'mcp-confirm --no-such-flag', '```', ''].join('\n'),
    );
    expect(block).toEqual({ file: 'fixture.md', line: 3, code: 'mcp-confirm --no-such-flag' });
    const { status, output } = run(block!);
    expect(status).toBe(2);
    expect(output).toContain('--no-such-flag');
    // An unmarked block is not run.
    expect(runnableBlocks('fixture.md', ['text', '```sh', 'false', '```'].join('\n'))).toEqual([]);
  });
});

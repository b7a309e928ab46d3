/**
 * The TypeScript examples in the docs compile (issue 20: "the library example does not compile as
 * written"). Every ```ts block with an `import` in README.md and docs/*.md, unless the line before
 * its fence is `<!-- fragment -->`, is written to its own module and type-checked by `tsc --strict`
 * against the built package: `mcp-confirm` resolves, as for a user, through package.json's
 * `exports` to `dist/` (run `npm run build` first).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PROCESS_DEADLINE_MS } from './helpers/deadlines.js';
import { markdownFilesUnder } from './helpers/markdownLinks.js';

const REPO = join(import.meta.dirname, '..');
const TSC = join(REPO, 'node_modules', 'typescript', 'bin', 'tsc');

interface Example {
  file: string;
  /** 1-based line of the block's opening fence. */
  line: number;
  code: string;
}

function examplesOf(file: string, text: string): Example[] {
  const lines = text.split('\n');
  const found: Example[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== '```ts' || lines[i - 1]?.trim() === '<!-- fragment -->') continue;
    const end = lines.indexOf('```', i + 1);
    if (end < 0) throw new Error(`${file}:${i + 1}: a ts block is never closed`);
    const code = lines.slice(i + 1, end).join('\n');
    if (/^import /m.test(code)) found.push({ file, line: i + 1, code });
  }
  return found;
}

mkdirSync(join(REPO, '.tmp'), { recursive: true });
const scratch = mkdtempSync(join(REPO, '.tmp', 'docs-examples-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Type-checks the examples, one module each; returns tsc's diagnostics as `file:line: message`. */
function typecheck(examples: readonly Example[]): string[] {
  const names = examples.map((example, index) => {
    const name = join(scratch, `example${index}.ts`);
    writeFileSync(name, `${example.code}\n`);
    return name;
  });
  const args = ['--ignoreConfig', '--noEmit', '--pretty', 'false', '--strict', '--skipLibCheck'];
  args.push(
    '--module',
    'nodenext',
    '--moduleResolution',
    'nodenext',
    '--target',
    'es2023',
    '--lib',
    'es2024',
    '--types',
    'node',
  );
  const result = spawnSync(process.execPath, [TSC, ...args, ...names], {
    cwd: REPO,
    encoding: 'utf8',
    timeout: PROCESS_DEADLINE_MS,
  });
  const diagnostics = `${result.stdout}${result.stderr}`.split('\n').filter((l) => l.trim() !== '');
  return diagnostics.map((d) => {
    const m = /example(\d+)\.ts\((\d+),\d+\): (.*)$/.exec(d);
    if (!m) return d;
    const example = examples[Number(m[1])]!;
    return `${example.file}:${example.line + Number(m[2])}: ${m[3]}`;
  });
}

const files = ['README.md', ...markdownFilesUnder(REPO, 'docs').filter((f) => f.split('/').length === 2)];
const examples = files.flatMap((file) => examplesOf(file, readFileSync(join(REPO, file), 'utf8')));

describe('TypeScript examples in the docs', () => {
  it('every example compiles against the built package, the README quick start among them', () => {
    expect(examples.some((e) => e.file === 'README.md')).toBe(true);
    expect(typecheck(examples)).toEqual([]);
  });

  it('control: an example that does not compile is reported with its file and line', () => {
    const broken = examplesOf(
      'fixture.md',
      ['```ts', "import { question } from 'mcp-confirm';", 'question`x`.nope();', '```'].join('\n'),
    );
    expect(typecheck(broken)).toEqual([expect.stringMatching(/^fixture\.md:3: .*nope/)]);
  });
});

/**
 * Every `@example` of a docstring in src/ type-checks as written (issue 20): the examples the API
 * reference (docs/api/) shows are extracted here, each into a module of its own, and compiled by
 * the project's TypeScript in one run. An example of the public API imports it by the package's
 * name (`mcp-confirm`, `mcp-confirm/stores/sqlite`, …), which resolves through package.json's
 * `exports` to the built `dist/` (package self-reference); an example of an internal module
 * imports it relatively, as the file it sits in would (`rootDirs` maps the copy's folder onto
 * src/). The control: an example with a type error, extracted and compiled the same way, is
 * reported at its line.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
const SRC = join(ROOT, 'src');

interface Example {
  /** The source file, relative to the repository root. */
  file: string;
  /** The 1-based line of its `@example` tag. */
  tagLine: number;
  /** The 1-based line of the source file that holds the example's first code line. */
  line: number;
  /** The code, one entry per source line. */
  code: string[];
}

/**
 * The `@example` blocks of one TypeScript source text, as TypeDoc reads them: the text after the
 * tag up to the next block tag (a line starting with `@`) or the end of the comment; its fenced
 * ```ts blocks when it has any, else the whole text is the code.
 */
function extractExamples(file: string, text: string): Example[] {
  const lines = text.split('\n');
  const examples: Example[] = [];
  let inComment = false;
  let current: { startLine: number; body: { line: number; text: string }[] } | undefined;
  const close = () => {
    if (current === undefined) return;
    const body = current.body;
    const fenced: Example[] = [];
    let open: Example | undefined;
    let sawFence = false;
    for (const { line, text: t } of body) {
      const fence = /^\s*```\s*(\S*)\s*$/.exec(t);
      if (fence && open === undefined) {
        sawFence = true;
        const lang = fence[1] ?? '';
        if (!['ts', 'typescript'].includes(lang)) {
          throw new Error(`${file}:${line}: an @example's code block is \`\`\`${lang}, not \`\`\`ts`);
        }
        open = { file, tagLine: current.startLine, line: line + 1, code: [] };
      } else if (fence && open !== undefined) {
        fenced.push(open);
        open = undefined;
      } else if (open !== undefined) {
        open.code.push(t);
      }
    }
    if (open !== undefined) throw new Error(`${file}:${open.line}: an @example's code block is not closed`);
    if (sawFence) examples.push(...fenced);
    else {
      const first = body.findIndex((b) => b.text.trim() !== '');
      if (first < 0) throw new Error(`${file}:${current.startLine}: an @example with no code`);
      examples.push({
        file,
        tagLine: current.startLine,
        line: body[first]!.line,
        code: body.slice(first).map((b) => b.text),
      });
    }
    current = undefined;
  };
  lines.forEach((raw, i) => {
    const lineNo = i + 1;
    if (!inComment) {
      if (!/^\s*\/\*\*/.test(raw) || /\*\/\s*$/.test(raw.replace(/^\s*\/\*\*/, ''))) return;
      inComment = true;
      return;
    }
    const end = /^\s*\*\/\s*$/.test(raw);
    const content = raw.replace(/^\s*\* ?/, '');
    if (end || /^@\w+/.test(content)) close();
    if (end) {
      inComment = false;
      return;
    }
    const tag = /^@example\b\s?(.*)$/.exec(content);
    if (tag) {
      current = { startLine: lineNo, body: [] };
      if (tag[1]!.trim() !== '') current.body.push({ line: lineNo, text: tag[1]! });
      return;
    }
    current?.body.push({ line: lineNo, text: content });
  });
  return examples;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return e.isFile() && e.name.endsWith('.ts') ? [path] : [];
  });
}

const CONTROL_SOURCE = [
  '/**',
  ' * A ledger with a bound that is not a number.',
  ' *',
  ' * @example',
  ' * ```ts',
  " * import { MemoryLedger } from 'mcp-confirm';",
  " * const ledger = new MemoryLedger({ maxPerPrincipal: 'many' });",
  ' * ```',
  ' */',
  'export {};',
].join('\n');

let work: string;
let examples: Example[];
let control: Example[];
/** tsc's diagnostics, by the example they fall in (`file:line` of the source), or by file. */
let diagnostics: { where: string; text: string }[];
let examplePathOf: Map<string, Example>;

beforeAll(() => {
  if (!existsSync(join(ROOT, 'dist', 'index.d.ts'))) throw new Error('dist/ is missing: run npm run build first');
  examples = sourceFiles(SRC)
    .sort()
    .flatMap((path) => extractExamples(relative(ROOT, path), readFileSync(path, 'utf8')));
  control = extractExamples('control/wrongBound.ts', CONTROL_SOURCE);

  // Inside the repository (.tmp/ is ignored by git), so `mcp-confirm` resolves to this package.
  mkdirSync(join(ROOT, '.tmp'), { recursive: true });
  work = mkdtempSync(join(ROOT, '.tmp', 'api-examples-'));
  examplePathOf = new Map();
  const write = (example: Example) => {
    const path = join(work, example.file.replace(/\.ts$/, `.example${example.line}.ts`));
    mkdirSync(dirname(path), { recursive: true });
    // A module of its own even without an import (`export {}`), on the example's own lines.
    writeFileSync(path, `${example.code.join('\n')}\nexport {};\n`);
    examplePathOf.set(relative(work, path), example);
  };
  for (const example of [...examples, ...control]) write(example);
  writeFileSync(
    join(work, 'tsconfig.json'),
    JSON.stringify({
      extends: join(ROOT, 'tsconfig.json'),
      compilerOptions: { noEmit: true, rootDirs: [SRC, join(work, 'src')] },
      include: ['src/**/*.ts', 'control/**/*.ts'],
    }),
  );
  const tsc = spawnSync(
    process.execPath,
    [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', work, '--pretty', 'false'],
    {
      cwd: work,
      encoding: 'utf8',
    },
  );
  if (tsc.error) throw tsc.error;
  diagnostics = [];
  for (const line of `${tsc.stdout}${tsc.stderr}`.split('\n')) {
    const m = /^(.+?)\((\d+),(\d+)\): (error .*)$/.exec(line.trim());
    if (m === null) {
      if (line.trim() !== '') diagnostics.push({ where: '(tsc)', text: line.trim() });
      continue;
    }
    const example = examplePathOf.get(relative(work, resolve(work, m[1]!)));
    diagnostics.push(
      example === undefined
        ? { where: relative(ROOT, resolve(work, m[1]!)), text: m[4]! }
        : { where: `${example.file}:${example.line + Number(m[2]) - 1}`, text: m[4]! },
    );
  }
});

afterAll(() => {
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

describe('the @example blocks of the docstrings', () => {
  it('reads code from every @example tag of src/', () => {
    // Every line of src/ that holds an @example tag, found by a plain search, has its code read.
    const tags = sourceFiles(SRC)
      .sort()
      .flatMap((path) =>
        readFileSync(path, 'utf8')
          .split('\n')
          .flatMap((text, i) => (/^\s*\*\s*@example\b/.test(text) ? [`${relative(ROOT, path)}:${i + 1}`] : [])),
      );
    expect(tags.length).toBeGreaterThan(0);
    expect([...new Set(examples.map((e) => `${e.file}:${e.tagLine}`))]).toEqual(tags);
    for (const example of examples)
      expect(example.code.join('').trim(), `${example.file}:${example.line}`).not.toBe('');
  });

  it('type-checks every example as written, against the built package', () => {
    const inExamples = diagnostics.filter((d) => !d.where.startsWith('control/'));
    expect(inExamples.map((d) => `${d.where}: ${d.text}`)).toEqual([]);
  });

  it('reports an example with a type error at its line (the control)', () => {
    expect(control).toHaveLength(1);
    expect(diagnostics.filter((d) => d.where.startsWith('control/'))).toEqual([
      {
        where: 'control/wrongBound.ts:7',
        text: expect.stringMatching(/^error TS2322: Type 'string' is not assignable to type 'number'/),
      },
    ]);
  });
});

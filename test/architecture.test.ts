/**
 * The layering of src/ (docs/architecture.md): a folder imports only folders below it in
 * {@link LAYERS}, and no module imports itself through a circle. Read from the import lines of
 * the sources (static `import … from`, `export … from` and dynamic `import('…')` of relative paths,
 * type-only imports included).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = join(dirname(fileURLToPath(import.meta.url)), '..', 'src');

/** Bottom to top: each entry may import the entries before it (and itself). Top-level files are named without `.ts`. */
const LAYERS = [
  'defaults',
  'errors',
  'principals',
  'state',
  'prompt',
  'store',
  'grant',
  'fs',
  'notify',
  'approval',
  'audit',
  'guard',
  'http',
  'proxy',
  'demo',
  'cli',
  'index',
];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** The relative imports of one source file, as paths of source files. */
function importsOf(file: string): string[] {
  // Docstring lines (` * …`) are not imports: an `@example` imports its own module by name.
  const text = readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => !/^\s*\*/.test(line))
    .join('\n');
  const out: string[] = [];
  for (const m of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^import\s+)'(\.{1,2}\/[^']+)'/gm)) {
    out.push(normalize(join(dirname(file), m[1]!.replace(/\.js$/, '.ts'))));
  }
  return out;
}

/** The layer of a source file: its folder under src/, or its name for a top-level file. */
function layerOf(file: string): string {
  const parts = relative(SRC, file).split('/');
  return parts.length > 1 ? parts[0]! : parts[0]!.replace(/\.ts$/, '');
}

/** Every import of `graph` that runs from a lower layer to a higher one, as `from -> to`. */
function upwardImports(graph: Map<string, string[]>): string[] {
  const upward: string[] = [];
  for (const [file, imports] of graph) {
    for (const target of imports) {
      if (LAYERS.indexOf(layerOf(target)) > LAYERS.indexOf(layerOf(file))) {
        upward.push(`${relative(SRC, file)} -> ${relative(SRC, target)}`);
      }
    }
  }
  return upward;
}

/** The import circles of `graph`, each as `a -> b -> a`. */
function importCircles(graph: Map<string, string[]>): string[] {
  const state = new Map<string, 1 | 2>();
  const circles: string[] = [];
  const visit = (file: string, stack: string[]): void => {
    state.set(file, 1);
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === 1) {
        circles.push([...stack.slice(stack.indexOf(next)), next].map((f) => relative(SRC, f)).join(' -> '));
      } else if (!state.has(next)) visit(next, stack);
    }
    stack.pop();
    state.set(file, 2);
  };
  for (const file of graph.keys()) if (!state.has(file)) visit(file, []);
  return circles;
}

const files = sources(SRC);
const graph = new Map(files.map((f) => [f, importsOf(f)]));
const at = (path: string): string => join(SRC, path);

describe('the layering of src/ (docs/architecture.md)', () => {
  it('names every folder and top-level file of src/ in the layer list', () => {
    expect(files.length).toBeGreaterThan(50);
    const unknown = [...new Set(files.map(layerOf))].filter((l) => !LAYERS.includes(l));
    expect(unknown).toEqual([]);
  });

  it('has no import from a lower layer to a higher one', () => {
    expect(upwardImports(graph)).toEqual([]);
  });

  it('finds an upward import and a circle when a graph has them (control of the two checks)', () => {
    const bad = new Map([
      [at('store/a.ts'), [at('guard/b.ts')]],
      [at('guard/b.ts'), [at('store/a.ts')]],
    ]);
    expect(upwardImports(bad)).toEqual(['store/a.ts -> guard/b.ts']);
    expect(importCircles(bad)).toEqual(['store/a.ts -> guard/b.ts -> store/a.ts']);
    // and the reader finds the real imports of a module that has some, dynamic ones included
    expect(importsOf(at('guard/confirmation.ts'))).toContain(at('store/memory.ts'));
    expect(graph.get(at('cli/main.ts'))).toContain(at('cli/lazyServer.ts')); // a dynamic import('./lazyServer.js')
  });

  it('has no import circle between modules', () => {
    expect(importCircles(graph)).toEqual([]);
  });

  it('resolves every relative import to a source file', () => {
    const missing = [...graph].flatMap(([file, imports]) =>
      imports.filter((t) => !graph.has(t)).map((t) => `${relative(SRC, file)} -> ${relative(SRC, t)}`),
    );
    expect(missing).toEqual([]);
  });
});

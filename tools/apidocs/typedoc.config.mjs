// TypeDoc's options for docs/api/ (`npm run docs:api` at the root; scripts/check-api-docs.sh in CI).
// The entry points are read from the root package.json's `exports`: each subpath's `types` file
// (./dist/X.d.ts) maps to its source (src/X.ts), so a new subpath is documented without an edit here,
// and one whose source is missing stops the generation.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const index = readFileSync(join(here, 'index.md'), 'utf8');

const entryPoints = [];
for (const [subpath, target] of Object.entries(pkg.exports)) {
  if (typeof target === 'string') continue; // ./package.json: not code
  const types = target.types;
  const match = /^\.\/dist\/(.+)\.d\.ts$/.exec(types ?? '');
  if (!match) throw new Error(`exports["${subpath}"].types is ${JSON.stringify(types)}, not ./dist/….d.ts`);
  const source = join(root, 'src', `${match[1]}.ts`);
  if (!existsSync(source)) throw new Error(`exports["${subpath}"]: its source ${source} does not exist`);
  entryPoints.push(source);
  // The entry's module comment names it as it is imported (`@module mcp-confirm/http`), and the
  // hand-written index (index.md, docs/api/README.md) links it: a link to a module TypeDoc does not
  // know is a warning, so a renamed or missing module stops the generation too.
  const name = `${pkg.name}${subpath.slice(1)}`;
  if (!index.includes(`{@link ${name}! ${name}}`)) {
    throw new Error(`index.md has no line for ${name} (exports["${subpath}"]): add one to its table`);
  }
}

/** @type {Partial<import('typedoc').TypeDocOptions & import('typedoc-plugin-markdown').PluginOptions>} */
export default {
  entryPoints,
  tsconfig: join(here, 'tsconfig.json'),
  plugin: ['typedoc-plugin-markdown'],
  out: join(root, 'docs', 'api'),
  // docs/api/README.md: the index, one line per entry point (index.md here); docs/api/modules.md
  // lists every module with its summary.
  readme: join(here, 'index.md'),
  indexFormat: 'table',
  // Every warning fails the generation (a broken {@link}, a referenced type that is not exported, …).
  treatWarningsAsErrors: true,
  excludePrivate: true,
  excludeInternal: true,
  // No source links: they would name a commit and change on every one.
  disableSources: true,
  hideGenerator: true,
  // No "**mcp-confirm**" banner on every page: the breadcrumb names the package already.
  hidePageHeader: true,
};

/**
 * Vitest configuration of the coverage run (`npm run coverage`, scripts/coverage.sh): the suite's own
 * configuration, plus what lets one tool (c8) read every process's V8 coverage the same way:
 * - The code under test is the built package: a test's relative import of `src/X.js` loads `dist/X.js`
 *   (tsc's output of that very file, with its source map), and dist/ is loaded by Node itself rather
 *   than through Vite's transform. The test processes then run the same JavaScript as the CLI that
 *   the e2e tests start, and Node records its source maps, so c8 maps both back to src/ alike.
 *   (Code that Vite transformed in memory cannot be mapped by c8: its text is nowhere on disk.)
 * - Each test process writes its coverage after each test file (takeCoverage.ts).
 * Requires a fresh `npm run build` (scripts/test.sh does it first).
 */
import { dirname, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig, mergeConfig, type Plugin } from 'vitest/config';
import base from '../../vitest.config.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SRC = resolve(ROOT, 'src') + sep;
const DIST = resolve(ROOT, 'dist') + sep;
const TEST = resolve(ROOT, 'test') + sep;

const escapeRe = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** `../../src/a/b.js` imported from test/ resolves to dist/a/b.js. */
function srcToDist(): Plugin {
  return {
    name: 'mcp-confirm-coverage-src-to-dist',
    enforce: 'pre',
    resolveId(source, importer) {
      if (!importer || !source.startsWith('.') || !importer.startsWith(TEST)) return null;
      const target = resolve(dirname(importer), source);
      if (!target.startsWith(SRC)) return null;
      return resolve(DIST, relative(SRC, target).replace(/\.ts$/, '.js'));
    },
  };
}

export default mergeConfig(
  base,
  defineConfig({
    root: ROOT,
    plugins: [srcToDist()],
    test: {
      setupFiles: [resolve(ROOT, 'scripts', 'coverage', 'takeCoverage.ts')],
      server: { deps: { external: [new RegExp('^' + escapeRe(DIST))] } },
    },
  }),
);

// Prints the closing line "N passed, N failed" from vitest's JSON report.
// failed = numFailedTests + numFailedTestSuites (files that failed to load) + numPendingTests + numTodoTests
// (a skipped or todo test fails the run). Exits 1 when anything failed, or when the report is missing or empty.
import { readFileSync } from 'node:fs';

const file = process.argv[2] ?? '.vitest.json';
let report;
try {
  report = JSON.parse(readFileSync(file, 'utf8'));
} catch {
  console.error(`no vitest JSON report at ${file}`);
  console.log('0 passed, 1 failed');
  process.exit(1);
}
const n = (k) => (Number.isInteger(report[k]) ? report[k] : 0);
const skipped = n('numPendingTests') + n('numTodoTests');
if (skipped > 0) console.error(`${skipped} skipped or todo test(s): counted as failed`);
const passed = n('numPassedTests');
const failed = n('numFailedTests') + n('numFailedTestSuites') + skipped;
const empty = n('numTotalTests') === 0;
if (empty) console.error('vitest ran no test: counted as failed');
console.log(`${passed} passed, ${failed + (empty ? 1 : 0)} failed`);
process.exit(failed > 0 || empty || report.success === false ? 1 : 0);

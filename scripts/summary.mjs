// Prints the closing line "N passed, N failed" from one or more vitest JSON reports, summed:
// `node scripts/summary.mjs [REPORT ...]` (default .vitest.json). scripts/test.sh gives it the main
// suite's report, scripts/test-interop.sh the interop suite's, .ci/run both and scripts/check-api-docs.sh's
// one-test report of the API reference check.
// Per report: failed = numFailedTests + numFailedTestSuites (files that failed to load) + numPendingTests
// + numTodoTests (a skipped or todo test fails the run); a report that is missing, unreadable or ran no
// test counts as 1 failed. Exits 1 when anything failed.
import { readFileSync } from 'node:fs';

const files = process.argv.length > 2 ? process.argv.slice(2) : ['.vitest.json'];
let passed = 0;
let failed = 0;
let ok = true;
for (const file of files) {
  let report;
  try {
    report = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    console.error(`no vitest JSON report at ${file}: counted as 1 failed`);
    failed += 1;
    ok = false;
    continue;
  }
  const n = (k) => (Number.isInteger(report[k]) ? report[k] : 0);
  const skipped = n('numPendingTests') + n('numTodoTests');
  if (skipped > 0) console.error(`${file}: ${skipped} skipped or todo test(s): counted as failed`);
  const empty = n('numTotalTests') === 0;
  if (empty) console.error(`${file}: vitest ran no test: counted as 1 failed`);
  const f = n('numFailedTests') + n('numFailedTestSuites') + skipped + (empty ? 1 : 0);
  passed += n('numPassedTests');
  failed += f;
  if (f > 0 || report.success === false) ok = false;
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(ok && failed === 0 ? 0 : 1);

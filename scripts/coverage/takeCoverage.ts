/**
 * Vitest setup file of the coverage run (scripts/coverage/vitest.config.ts): writes this test
 * process's V8 coverage into NODE_V8_COVERAGE after each test file. Vitest ends its worker processes
 * without a normal exit, so Node would never write it otherwise. Each call writes what ran since the
 * last one; c8 adds them up.
 */
import { afterAll } from 'vitest';
import { takeCoverage } from 'node:v8';

afterAll(() => {
  if (process.env['NODE_V8_COVERAGE']) takeCoverage();
});

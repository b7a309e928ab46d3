import { defineConfig } from 'vitest/config';
import { TEST_TIMEOUT_MS } from './test/helpers/deadlines.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Generous bounds that only catch hangs (test/helpers/deadlines.ts); no test measures speed.
    testTimeout: TEST_TIMEOUT_MS,
    hookTimeout: TEST_TIMEOUT_MS,
    teardownTimeout: TEST_TIMEOUT_MS,
    pool: 'forks',
    // Three test files at once on CI's 2 cores: most of the e2e time is spent waiting on child
    // processes (servers, Chromium, HAProxy), and on a shared machine more runnable workers win a
    // fairer share of the CPU. Vitest's default here would be one (cores - 1). Tests share nothing
    // but the throwaway Redis (each under its own namespace; the files that freeze Redis start
    // their own) and pick free ports.
    maxWorkers: 3,
  },
});

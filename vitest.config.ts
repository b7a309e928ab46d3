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
  },
});

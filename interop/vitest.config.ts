import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Bounds that only turn a hang into a failure; nothing is timed.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Each file starts its own server and client processes; two files at once on CI's 2 cores.
    maxWorkers: 2,
  },
});

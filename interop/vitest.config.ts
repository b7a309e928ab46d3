import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The link flow (issue 19 part 1) is not on main yet: test/linkFlow.test.ts states its contract
    // against the real clients and is enabled by deleting this line once the link branch is merged
    // (or run now with INTEROP_LINK_FLOW=1).
    exclude: process.env.INTEROP_LINK_FLOW === '1' ? [] : ['test/linkFlow.test.ts'],
    // Bounds that only turn a hang into a failure; nothing is timed.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Each file starts its own server and client processes; two files at once on CI's 2 cores.
    maxWorkers: 2,
  },
});

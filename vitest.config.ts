import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // expect.poll waits for something the test cannot await; its default 1 s is too short on a
    // loaded 2-core CI machine, and a longer wait only slows a test that fails anyway.
    expect: { poll: { timeout: 10_000 } },
  },
});

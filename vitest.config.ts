import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

// Tests that need more than this checkout and its node_modules (npm installs, the Docker image's
// contents, other platforms, data at scale, Redis replicas, a browser) are named
// `*.environment.test.ts`: `npm test` runs them with the rest, `npm run test:quick` leaves them out.
const ENVIRONMENT_TESTS = "test/**/*.environment.test.ts";

/** What both projects run with. */
const everyTest = {
  globalSetup: ["test/support/global-setup.ts"],
  setupFiles: ["test/support/wait-for-timeout.ts"],
  testTimeout: 30_000,
  hookTimeout: 60_000,
  // expect.poll waits for something the test cannot await; its default 1 s is too short on a
  // loaded 2-core CI machine, and a longer wait only slows a test that fails anyway.
  expect: { poll: { timeout: 10_000 } },
};

export default defineConfig({
  test: {
    // Most files spend their time waiting on servers, child processes and streams rather than
    // computing: a file a core keeps the cores busy (vitest's default, one less than the cores,
    // runs one file at a time on a 2-core machine). Two a core was faster still, but its load
    // failed tests that race real servers (3 of 5 fresh-clone runs here, a different test each).
    // `npm run test:quick` (npm names the script it runs) takes three files per two cores: its files
    // wait on the servers and processes they start more than the rest do, and it is the loop a
    // developer runs on a machine of their own, while CI keeps a file a core.
    // Set here, not in the projects, so that --maxWorkers on the command line still decides.
    maxWorkers:
      process.env.npm_lifecycle_event === "test:quick"
        ? Math.ceil(availableParallelism() * 1.5)
        : availableParallelism(),
    projects: [
      {
        test: {
          ...everyTest,
          name: "quick",
          include: ["test/**/*.test.ts"],
          exclude: [ENVIRONMENT_TESTS],
        },
      },
      { test: { ...everyTest, name: "environment", include: [ENVIRONMENT_TESTS] } },
    ],
  },
});

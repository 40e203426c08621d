// vi.waitFor gives up after 1 s unless told otherwise, as expect.poll does: too short for a service
// process to start or reload on a loaded 2-core CI machine, where files run beside each other
// (vitest.config.ts gives expect.poll 10 s for the same reason; a longer wait only slows a test
// that fails anyway). A call that names its own timeout keeps it.
import { vi } from "vitest";

const WAIT_FOR_TIMEOUT_MS = 10_000;

const waitFor = vi.waitFor;
vi.waitFor = ((callback, options) =>
  waitFor(
    callback,
    typeof options === "number" ? options : { timeout: WAIT_FOR_TIMEOUT_MS, ...options },
  )) as typeof vi.waitFor;

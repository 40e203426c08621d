// Headless Chromium for the browser tests: Debian's `chromium` as found on PATH (`npm test`
// installs the package when it is missing), driven by playwright-core. A missing browser fails the
// tests; they never skip.
import { spawnSync } from "node:child_process";
import { type Browser, chromium } from "playwright-core";

function chromiumPath(): string {
  const found = spawnSync("sh", ["-c", "command -v chromium"], { encoding: "utf8" });
  const path = found.stdout.trim();
  if (found.status !== 0 || path === "") {
    throw new Error(
      "No chromium on PATH: `npm test` installs Debian's package, or run apt-get install -y chromium",
    );
  }
  return path;
}

export function launchChromium(): Promise<Browser> {
  // No sandbox: CI and containers run the tests as root, where Chromium's sandbox refuses to start.
  return chromium.launch({ executablePath: chromiumPath(), args: ["--no-sandbox"] });
}

// A newcomer's `npm install && npm start` on a fresh copy of the project, with the machine's own Node
// on PATH (any from 18 on) and each npm they may have: 10 and 11 run dependency install scripts, 12
// runs only those package.json's allowScripts approves. The `node` package's install script is what
// puts Node 24 at node_modules/.bin/node, which npm scripts run; without it `npm start` would run
// the machine's Node, which cannot load the TypeScript.
import { rmSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "vitest";
import {
  copyOfCheckout,
  majorVersion,
  newcomerEnv,
  runToEnd,
  startServer,
} from "./support/newcomer.ts";

// Concurrent: each install spends much of its time waiting on the disk and the npm cache.
describe("npm install && npm start on a fresh copy", () => {
  it.concurrent.for([10, 11, 12])(
    "npm %i installs Node 24 as node_modules/.bin/node, and npm start serves on it",
    { timeout: 300_000 },
    async (npmMajor, { expect }) => {
      const folder = copyOfCheckout();
      try {
        // From the machine's npm cache where it has them: the lockfile fixes every version anyway.
        const npm = ["-y", "--prefer-offline", `npm@${npmMajor}`];
        const install = await runToEnd(
          "npx",
          [...npm, "install", "--prefer-offline", "--no-audit", "--no-fund"],
          folder,
          newcomerEnv(),
        );
        expect(install.code, install.stderr).toBe(0);
        // Every dependency's install script is approved or denied, none left to a warning.
        expect(install.stderr).not.toMatch(/allowScripts/);
        expect(majorVersion(join(folder, "node_modules", ".bin", "node"))).toBe(24);

        const service = await startServer("npx", [...npm, "start"], folder, {
          ...newcomerEnv(),
          PORT: "0",
          API_KEYS: "setup-test-key-0123456789",
        });
        const health = await fetch(`${service.baseUrl}/health`);
        expect(health.status).toBe(200);
        service.stop();
      } finally {
        rmSync(folder, { recursive: true, force: true });
      }
    },
  );
});

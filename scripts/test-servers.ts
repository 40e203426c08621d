// The tests drive real servers, and run the docs' shell commands with the tools they name, all from
// Debian packages. `npm test` runs this first: whatever is missing is installed with apt-get (as
// root), so those tests run on a fresh machine instead of skipping.
import { type ExecFileSyncOptions, execFileSync, spawnSync } from "node:child_process";

const servers = [
  { command: "redis-server", debianPackage: "redis-server" },
  { command: "chromium", debianPackage: "chromium" },
  { command: "curl", debianPackage: "curl" },
  { command: "jq", debianPackage: "jq" },
  { command: "openssl", debianPackage: "openssl" },
  // Prometheus's linter, which /metrics must pass.
  { command: "promtool", debianPackage: "prometheus" },
];

const onPath = (command: string) => spawnSync("sh", ["-c", `command -v ${command}`]).status === 0;
const missing = servers.filter((server) => !onPath(server.command));

if (missing.length > 0) {
  const packages = missing.map((server) => server.debianPackage);
  if (process.getuid?.() !== 0) {
    console.error(
      `The tests need ${packages.join(" and ")}: sudo apt-get install -y ${packages.join(" ")}`,
    );
    process.exit(1);
  }
  console.log(`Installing ${packages.join(" and ")} for the tests (apt-get)...`);
  const quietly: ExecFileSyncOptions = {
    stdio: ["ignore", "ignore", "inherit"],
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
  };
  execFileSync("apt-get", ["update", "-qq"], quietly);
  execFileSync(
    "apt-get",
    ["install", "-y", "-qq", "--no-install-recommends", ...packages],
    quietly,
  );
}

// `npm install` on each supported platform gets that platform's native DuckDB and Biome builds.
// The lockfile must list them all, although this machine only ever installs the linux-x64 ones;
// npm's dry run for another --os/--cpu reports what that machine's install would add and remove, as
// the docs' dry-run lines say it does.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { runShell, shellCommands } from "./support/doc-commands.ts";

const run = promisify(execFile);

const PLATFORMS = [
  { name: "linux-x64", os: "linux", cpu: "x64" },
  { name: "linux-arm64", os: "linux", cpu: "arm64" },
  { name: "macOS arm64", os: "darwin", cpu: "arm64" },
];

const PLATFORM_PACKAGES = PLATFORMS.flatMap(({ os, cpu }) => [
  `@duckdb/node-bindings-${os}-${cpu}`,
  `@biomejs/cli-${os}-${cpu}`,
]);

/** Which platform packages `npm install` on `os`/`cpu` ends with: today's node_modules, changed. */
async function platformPackagesOn(os: string, cpu: string): Promise<string[]> {
  const { stdout } = await run("npm", [
    "install",
    "--dry-run",
    "--no-audit",
    "--no-fund",
    `--os=${os}`,
    `--cpu=${cpu}`,
    "--libc=glibc",
  ]);
  const installed = new Set(PLATFORM_PACKAGES.filter((name) => existsSync(`node_modules/${name}`)));
  for (const [, action, name = ""] of stdout.matchAll(/^(add|remove) (\S+) /gm)) {
    if (action === "add") installed.add(name);
    else installed.delete(name);
  }
  return [...installed].filter((name) => PLATFORM_PACKAGES.includes(name)).sort();
}

describe("npm install on each supported platform", () => {
  it.each(PLATFORMS)("$name gets its own DuckDB and Biome native builds", async ({ os, cpu }) => {
    expect(await platformPackagesOn(os, cpu)).toEqual([
      `@biomejs/cli-${os}-${cpu}`,
      `@duckdb/node-bindings-${os}-${cpu}`,
    ]);
  });
});

describe("the docs' dry-run install lines", () => {
  it("say what npm's dry-run install on each other platform adds, as npm says it", async () => {
    const dryRuns = shellCommands().filter(({ text }) => text.startsWith("npm install --dry-run "));
    expect(dryRuns.length).toBeGreaterThan(0);
    for (const { text } of dryRuns) {
      const [command = "", said = ""] = text.split(/ +# /);
      const { code, stdout, stderr } = await runShell(command, {});
      expect(code, stderr).toBe(0);
      expect(stdout.split("\n"), command).toContain(said);
    }
  }, 60_000);
});

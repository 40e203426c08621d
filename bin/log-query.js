#!/usr/bin/env node
// The `log-query` command. Plain JavaScript, so that any Node can say in one line what it needs;
// the client itself is TypeScript (src/cli/), which Node 24 runs by stripping its types. Node
// refuses to strip types under node_modules, where `npx --package=<tarball>` installs this package:
// a load hook strips this package's own .ts files there.
import { readFileSync } from "node:fs";

const major = Number(process.versions.node.split(".")[0]);
if (major < 24) {
  process.stderr.write(
    `log-query needs Node 24 or newer, not ${process.versions.node}: install Node 24 (nvm install 24).\n`,
  );
  process.exit(2);
}

// Imported once the version is known: an older node:module lacks these, and would fail the import.
const { registerHooks, stripTypeScriptTypes } = await import("node:module");
const root = new URL("../", import.meta.url).href;
registerHooks({
  load(url, context, nextLoad) {
    if (!url.startsWith(root) || !url.endsWith(".ts") || !url.includes("/node_modules/")) {
      return nextLoad(url, context);
    }
    const source = readFileSync(new URL(url), "utf8");
    return {
      format: "module",
      source: quietly(() => stripTypeScriptTypes(source)),
      shortCircuit: true,
    };
  },
});

/** Runs `work` without Node's one-time notice that stripTypeScriptTypes is experimental. */
function quietly(work) {
  const emitWarning = process.emitWarning;
  process.emitWarning = () => {};
  try {
    return work();
  } finally {
    process.emitWarning = emitWarning;
  }
}

const { main } = await import("../src/cli/main.ts");
process.exitCode = await main(process.argv.slice(2));

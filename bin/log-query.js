#!/usr/bin/env node
// The `log-query` command. Plain JavaScript, so that any Node can run this much: the client itself
// is TypeScript (src/cli/), which Node 24 runs by stripping its types. On an older Node (the
// machine's own, after `npm link` or through npx) it runs itself again on the Node 24 that
// `npm install` brought with the package (the `node` package), and says in one line what to do
// when there is none. Node refuses to strip types under node_modules, where
// `npx --package=<tarball>` installs this package: a load hook strips this package's own .ts files
// there.
import { spawn } from "node:child_process";
import { readFileSync, realpathSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const major = Number(process.versions.node.split(".")[0]);
if (major < 24) {
  const script = realpathSync(fileURLToPath(import.meta.url));
  const node = bundledNode(script);
  if (node === undefined || node === realpathSync(process.execPath)) {
    process.stderr.write(
      `log-query needs Node 24 or newer, not ${process.versions.node}, and found no Node 24 installed with it (node_modules/.bin/node): run \`npm install\` in ${dirname(dirname(script))}, or install Node 24 (nvm install 24).\n`,
    );
    process.exit(2);
  }
  const child = spawn(node, [script, ...process.argv.slice(2)], { stdio: "inherit" });
  // Ctrl-C reaches both through the terminal; a signal sent to this process alone is passed on.
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
    process.on(signal, () => child.kill(signal));
  }
  child.on("exit", (code, signal) => {
    if (signal) {
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
    }
    process.exit(code ?? 1);
  });
} else {
  await run();
}

/** The `node` package's binary, as Node would find the package from `script`; none if absent. */
function bundledNode(script) {
  try {
    const manifest = createRequire(script).resolve("node/package.json");
    const { bin } = JSON.parse(readFileSync(manifest, "utf8"));
    return realpathSync(join(dirname(manifest), typeof bin === "string" ? bin : bin.node));
  } catch {
    return undefined;
  }
}

async function run() {
  // Imported once the version is known: an older node:module lacks these.
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
  const { main } = await import("../src/cli/main.ts");
  process.exitCode = await main(process.argv.slice(2));
}

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

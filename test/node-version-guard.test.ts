// A Node older than 24 cannot load the project's TypeScript: it fails on the ".ts" extension with a
// stack trace. Every npm script that runs node checks the version first and says what to do instead,
// in one line: the machine's Node runs them when node_modules/.bin/node is missing (no install yet,
// or one whose install scripts did not run).
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  copyOfCheckout,
  newcomerEnv,
  newcomerPath,
  olderNode,
  ROOT,
  runToEnd,
} from "./support/newcomer.ts";

const GUARD = "scripts/require-node-24.js";
const { scripts } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
  scripts: Record<string, string>;
};
const nodeScripts = Object.keys(scripts).filter((name) =>
  /(^|[&;] |exec )node /.test(scripts[name] ?? ""),
);
const node = olderNode();
const nodeVersion = execFileSync(node, ["-p", "process.versions.node"], {
  encoding: "utf8",
}).trim();

/** The lines of `output` that say something, npm's own `npm error`/`npm warn` noise aside. */
function saidLines(output: string): string[] {
  return output.split("\n").filter((line) => line.trim() !== "" && !/^npm (error|warn)/.test(line));
}

describe(`npm scripts on Node ${nodeVersion}, without node_modules/.bin/node`, () => {
  const folder = copyOfCheckout();

  it("covers the scripts a newcomer runs", () => {
    expect(nodeScripts).toEqual(expect.arrayContaining(["start", "dev", "key", "demo-exports"]));
  });

  it.each(nodeScripts)("`npm run %s` fails with one line saying how to run it", async (name) => {
    const { code, stdout, stderr } = await runToEnd("npm", ["run", name], folder, {
      ...newcomerEnv(),
      PATH: `${dirname(node)}${delimiter}${newcomerPath()}`,
    });
    expect(code).not.toBe(0);
    expect(stderr).not.toMatch(/ERR_UNKNOWN_FILE_EXTENSION|^\s+at /m);
    expect(saidLines(stderr)).toEqual([
      `This project runs on Node 24, not ${nodeVersion}: its bundled Node 24 (node_modules/.bin/node) is missing: run \`npm install\` with install scripts allowed, or install Node 24 (see .nvmrc).`,
    ]);
    // Only npm's banner naming the script, never the service's or a script's output.
    expect(saidLines(stdout).filter((line) => !line.startsWith(">"))).toEqual([]);
  });
});

describe("the version check", () => {
  it("run by hand on an older Node, points at the npm scripts, which use the bundled Node 24", async () => {
    const { code, stderr } = await runToEnd(node, [GUARD], ROOT, newcomerEnv());
    expect(code).toBe(1);
    expect(stderr).toBe(
      `This project runs on Node 24, not ${nodeVersion}: use \`npm start\` / \`npm run <script>\`, which run the bundled Node 24 (node_modules/.bin/node), or install Node 24 (see .nvmrc).\n`,
    );
  });

  it("passes silently on Node 24", async () => {
    const { code, stdout, stderr } = await runToEnd(process.execPath, [GUARD], ROOT, newcomerEnv());
    expect({ code, stdout, stderr }).toEqual({ code: 0, stdout: "", stderr: "" });
  });
});

// Run first by every npm script that runs the TypeScript. A Node older than 24 cannot load a .ts
// file and dies with a stack trace about its extension; this plain JavaScript, which any Node runs,
// says in one line what to do instead and fails the script. npm scripts run
// node_modules/.bin/node (the `node` package, Node 24), so an older Node here means that binary is
// missing, or the command was run outside npm.
import { existsSync } from "node:fs";

const major = Number(process.versions.node.split(".")[0]);
if (major < 24) {
  const advice = existsSync(new URL("../node_modules/.bin/node", import.meta.url))
    ? "use `npm start` / `npm run <script>`, which run the bundled Node 24 (node_modules/.bin/node)"
    : "its bundled Node 24 (node_modules/.bin/node) is missing: run `npm install` with install scripts allowed";
  process.stderr.write(
    `This project runs on Node 24, not ${process.versions.node}: ${advice}, or install Node 24 (see .nvmrc).\n`,
  );
  process.exit(1);
}

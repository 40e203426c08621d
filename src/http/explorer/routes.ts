// GET /, the explorer page, and its assets under /explorer/: the hand-written ES modules and CSS of
// page/ (no build step) and uPlot's own minified build from node_modules. The files are read once at
// startup into a fixed set of routes, so no request path ever reaches the file system. They need no
// credential (the page asks for the key and sends it as a header on its API calls), so they are
// counted per client address instead.
import { readdir, readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { extname } from "node:path";
import type { FastifyInstance } from "fastify";
import type { AnonymousLimit } from "../anonymous-limit.ts";
import { FixedBody } from "../fixed-body.ts";

const PAGE = new URL("page/", import.meta.url).pathname;
const fromPackage = createRequire(import.meta.url).resolve;

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
};

/** URL path → file: index.html at /, every other file of page/ and uPlot's two under /explorer/. */
async function files(): Promise<Map<string, string>> {
  const served = new Map<string, string>();
  for (const name of await readdir(PAGE)) {
    served.set(name === "index.html" ? "/" : `/explorer/${name}`, `${PAGE}${name}`);
  }
  for (const name of ["uPlot.iife.min.js", "uPlot.min.css"]) {
    served.set(`/explorer/${name}`, fromPackage(`uplot/dist/${name}`));
  }
  return served;
}

// Same origin only, no inline script or style: everything the page runs or calls is served here.
// uPlot styles its elements through the CSSOM, which style-src does not govern.
const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
  "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** The page and its files, counted by `limit` (they need no credential) and sent compressed. */
export async function explorerPage(app: FastifyInstance, { limit }: { limit: AnonymousLimit }) {
  app.addHook("onRequest", limit);
  for (const [path, file] of await files()) {
    const type = TYPES[extname(file)];
    if (type === undefined) throw new Error(`No media type for ${file}`);
    const body = new FixedBody(await readFile(file), type);
    app.get(path, async (request, reply) => {
      reply
        .header("content-security-policy", CONTENT_SECURITY_POLICY)
        .header("x-content-type-options", "nosniff")
        .header("referrer-policy", "no-referrer")
        // Revalidated on every load, so a new version of the service is seen at once: the page
        // imports its modules by names that do not change.
        .header("cache-control", "no-cache");
      return body.send(request, reply);
    });
  }
}

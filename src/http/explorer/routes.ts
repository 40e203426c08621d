// GET /, the explorer page, and its assets under /explorer/: hand-written ES modules and CSS (no
// build step) plus uPlot's own minified build from node_modules. A fixed list of files read once at
// startup, so no request path ever reaches the file system. They need no credential: the page asks
// for the key and sends it as a header on its API calls.
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import type { FastifyInstance } from "fastify";
import { strongEtag } from "../../cache/etag.ts";

const page = (name: string) => new URL(`page/${name}`, import.meta.url).pathname;
const fromPackage = createRequire(import.meta.url).resolve;

const JS = "text/javascript; charset=utf-8";
const CSS = "text/css; charset=utf-8";

const FILES: readonly { path: string; file: string; type: string }[] = [
  { path: "/", file: page("index.html"), type: "text/html; charset=utf-8" },
  { path: "/explorer/explorer.css", file: page("explorer.css"), type: CSS },
  { path: "/explorer/main.js", file: page("main.js"), type: JS },
  { path: "/explorer/api.js", file: page("api.js"), type: JS },
  { path: "/explorer/form.js", file: page("form.js"), type: JS },
  { path: "/explorer/charts.js", file: page("charts.js"), type: JS },
  { path: "/explorer/table.js", file: page("table.js"), type: JS },
  { path: "/explorer/uPlot.min.css", file: fromPackage("uplot/dist/uPlot.min.css"), type: CSS },
  {
    path: "/explorer/uPlot.iife.min.js",
    file: fromPackage("uplot/dist/uPlot.iife.min.js"),
    type: JS,
  },
];

// Same origin only, no inline script or style: everything the page runs or calls is listed above or
// is this service's API. uPlot styles its elements through the CSSOM, which style-src does not govern.
const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
  "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export async function explorerPage(app: FastifyInstance) {
  for (const { path, file, type } of FILES) {
    const body = await readFile(file);
    const etag = strongEtag(body.toString("latin1"), { "content-type": type });
    app.get(path, async (request, reply) => {
      reply
        .header("content-type", type)
        .header("content-security-policy", CONTENT_SECURITY_POLICY)
        .header("x-content-type-options", "nosniff")
        .header("referrer-policy", "no-referrer")
        // Revalidated on every load, so a new version of the service is seen at once.
        .header("cache-control", "no-cache")
        .header("etag", etag);
      if (request.headers["if-none-match"] === etag) return reply.code(304).send();
      return reply.send(body);
    });
  }
}

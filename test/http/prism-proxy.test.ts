// Stoplight Prism's validating proxy, a client nobody here wrote, holds every answer of the plain
// endpoint paths to /openapi.json: CSV and NDJSON chosen by Accept included (it flagged all 36 of
// them while the document declared those formats on the suffixed paths only).
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { builtInCatalog } from "../../src/endpoints/load-catalog.ts";
import { demoApp } from "../support/demo-app.ts";
import { freePort } from "../support/free-port.ts";
import { temporaryFile } from "../support/temporary-file.ts";

const KEY = "prism-key-0123456789012345";
const PRISM = join(import.meta.dirname, "../../node_modules/.bin/prism");

const demo = demoApp({ auth: { apiKeys: [KEY] } }, { cache: {} });

let prism: ChildProcess;
let proxy: string;
beforeAll(async () => {
  const service = await demo.app.listen({ host: "127.0.0.1", port: 0 });
  const document = temporaryFile(
    "openapi.json",
    (await demo.app.inject({ url: "/openapi.json" })).body,
  );
  const port = await freePort();
  proxy = `http://127.0.0.1:${port}`;
  prism = spawn(PRISM, ["proxy", document, service, "-p", String(port), "-h", "127.0.0.1"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let said = "";
  prism.stdout?.on("data", (chunk) => (said += chunk));
  prism.stderr?.on("data", (chunk) => (said += chunk));
  await vi.waitFor(
    () => {
      if (!said.includes("Prism is listening")) throw new Error(`Prism is not listening: ${said}`);
    },
    { timeout: 60_000, interval: 200 },
  );
}, 90_000);
afterAll(() => {
  prism?.kill();
});

/** The Error-severity violations Prism found in an answer (its sl-violations header). */
const violations = (response: Response): { message: string; severity: string }[] =>
  JSON.parse(response.headers.get("sl-violations") ?? "[]").filter(
    (violation: { severity: string }) => violation.severity === "Error",
  );

describe("Prism's validating proxy", () => {
  const catalog = builtInCatalog();
  const cases = catalog.entries.flatMap((endpoint) =>
    [
      `/api/endpoints/${endpoint.name}`,
      `/api/endpoints/query/${endpoint.name}`,
      `/api/endpoints/query/${endpoint.id}`,
    ].flatMap((path) =>
      ["application/json", "text/csv", "application/x-ndjson"].map((accept) => ({
        url: `${path}?${new URLSearchParams(endpoint.example)}`,
        accept,
      })),
    ),
  );

  it.each(cases)(
    "finds the answer to $url as $accept as the document says",
    async ({ url, accept }) => {
      const response = await fetch(`${proxy}${url}`, { headers: { "x-api-key": KEY, accept } });
      await response.arrayBuffer();
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toContain(accept);
      expect(violations(response)).toEqual([]);
    },
  );
});

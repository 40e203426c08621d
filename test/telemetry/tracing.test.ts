// Traces as an operator's collector receives them: the service started as `npm start` runs it, with
// the standard OTEL_* variables pointing at an OTLP/HTTP JSON receiver in this test.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { start } from "../support/service-process.ts";

const KEY = "tracing-test-key-0123456789";
const PROJECT = "traced-project-value";
const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID = "00f067aa0ba902b7";
// Logs every import of the OpenTelemetry SDK or Fastify's instrumentation, to stderr.
const SDK_WATCH = fileURLToPath(new URL("../support/watch-otel-imports.ts", import.meta.url));

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: { key: string; value: Record<string, unknown> }[];
}

/** An OTLP/HTTP receiver: every POST body as text, and the spans in them. */
async function receiver() {
  const bodies: string[] = [];
  const server: Server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => {
      body += chunk;
    });
    request.on("end", () => {
      bodies.push(body);
      response.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(() => new Promise((resolve) => server.close(resolve)));
  const spans = (): OtlpSpan[] =>
    bodies.flatMap((body) =>
      (JSON.parse(body).resourceSpans ?? []).flatMap((r: { scopeSpans: { spans: OtlpSpan[] }[] }) =>
        r.scopeSpans.flatMap((scope) => scope.spans),
      ),
    );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, bodies, spans };
}

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

const attribute = (span: OtlpSpan | undefined, key: string) =>
  span?.attributes.find((a) => a.key === key)?.value;

describe("traces", () => {
  it("continue the caller's trace: a server span, its cache lookup and engine query, and no secrets", async () => {
    const collector = await receiver();
    const service = await start(
      {
        API_KEYS: KEY,
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_SERVICE_NAME: "tracing-test",
        OTEL_BSP_SCHEDULE_DELAY: "50",
      },
      ["--import", SDK_WATCH],
    );
    expect(service.stderr()).toMatch(/imported @opentelemetry\/sdk-node/);
    const response = await fetch(
      `${service.baseUrl}/api/endpoints/functions.invocation-stats?project=${PROJECT}&interval=1hr`,
      { headers: { "x-api-key": KEY, traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` } },
    );
    expect(response.status).toBe(200);

    await expect
      .poll(() => collector.spans().map((s) => s.name), { timeout: 15_000 })
      .toEqual(expect.arrayContaining(["cache lookup", "engine query"]));
    const spans = collector.spans().filter((s) => s.traceId === TRACE_ID);
    const server = spans.find((s) => s.parentSpanId === PARENT_ID);
    expect(attribute(server, "http.route")).toEqual({
      stringValue: "/api/endpoints/:nameOrId",
    });
    expect(attribute(server, "http.response.status_code")).toEqual({ intValue: 200 });
    expect(attribute(server, "query_service.endpoint")).toEqual({
      stringValue: "functions.invocation-stats",
    });
    expect(attribute(server, "query_service.credential")).toEqual({ stringValue: "api_keys" });

    // Each span descends from the server span, in the caller's trace.
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const descendsFromServer = (span: OtlpSpan | undefined): boolean =>
      span !== undefined &&
      (span.spanId === server?.spanId || descendsFromServer(byId.get(span.parentSpanId ?? "")));
    const lookup = spans.find((s) => s.name === "cache lookup");
    const query = spans.find((s) => s.name === "engine query");
    expect(descendsFromServer(lookup)).toBe(true);
    expect(descendsFromServer(query)).toBe(true);
    expect(attribute(lookup, "query_service.cache")).toEqual({ stringValue: "MISS" });
    expect(attribute(query, "db.system")).toEqual({ stringValue: "duckdb" });
    expect(attribute(query, "query_service.endpoint")).toEqual({
      stringValue: "functions.invocation-stats",
    });
    expect(attribute(query, "query_service.rows")).toEqual({ intValue: expect.any(Number) });

    const exported = collector.bodies.join("\n");
    expect(exported).not.toContain(KEY);
    expect(exported).not.toContain(PROJECT);
    expect(exported).toContain("tracing-test");
  });

  it("are not loaded at all without an OTLP endpoint", async () => {
    const service = await start({ API_KEYS: KEY }, ["--import", SDK_WATCH]);
    const response = await fetch(`${service.baseUrl}/api/endpoints`, {
      headers: { "x-api-key": KEY },
    });
    expect(response.status).toBe(200);
    expect(service.stderr()).not.toMatch(/imported @opentelemetry\/sdk|imported @fastify\/otel/);
  });
});

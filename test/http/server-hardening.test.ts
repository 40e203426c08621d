// The HTTP server on the open internet, over real sockets where the bytes matter: timeouts that
// hold, no bodies read, a connection cap with the management listener still answering, framing
// errors in the envelope, and load shedding that spares the probes.
import { connect } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { type AppDeps, serviceApp } from "../../src/app.ts";
import { createDuckDbEngine } from "../../src/engines/duckdb.ts";
import { buildManagementApp } from "../../src/http/management.ts";
import { type ConfigOverrides, configFrom } from "../support/config-from.ts";

const KEY = "hardening-key-0123456789";

const closing: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.all(closing.splice(0).map((close) => close()));
});

async function listening(config: ConfigOverrides = {}, deps: Partial<AppDeps> = {}) {
  const engine = await createDuckDbEngine();
  const app = await serviceApp(configFrom({ ...config, auth: { apiKeys: [KEY] } }), {
    engine,
    ...deps,
  });
  await app.listen({ port: 0, host: "127.0.0.1" });
  closing.push(async () => {
    await app.close();
    await engine.close();
  });
  return { app, engine, port: (app.server.address() as { port: number }).port };
}

/** A raw connection: what it received, and when it is closed. */
function rawConnection(port: number) {
  const socket = connect(port, "127.0.0.1");
  let received = "";
  socket.on("data", (chunk) => {
    received += chunk;
  });
  socket.on("error", () => {});
  const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
  const ready = new Promise<void>((resolve) => socket.once("connect", () => resolve()));
  return { socket, closed, ready, received: () => received };
}

/** The status line's code and the JSON body of a raw HTTP/1.1 response. */
function parseResponse(text: string) {
  const [head = "", body = ""] = text.split("\r\n\r\n");
  return {
    status: Number(head.split(" ")[1]),
    headers: head.toLowerCase(),
    body: body ? JSON.parse(body) : undefined,
  };
}

describe("timeouts", () => {
  it("cuts a client that sends its headers too slowly with 408 in the envelope", async () => {
    const { port } = await listening({
      http: { requestTimeoutMs: 1_000, headersTimeoutMs: 500 },
    });
    const { socket, closed, ready, received } = rawConnection(port);
    await ready;
    socket.write("GET /health HTTP/1.1\r\nHost: x\r\n");
    const trickle = setInterval(() => socket.writable && socket.write("X-Slow: 1\r\n"), 100);
    // A client that goes on sending headers would hold the connection forever without the timeout.
    await closed;
    clearInterval(trickle);
    const response = parseResponse(received());
    expect(response.status).toBe(408);
    expect(response.body).toEqual({
      error: { code: "request_timeout", message: expect.any(String) },
    });
    expect(response.headers).toContain("x-request-id:");
  });
});

describe("shutdown", () => {
  it("closes a connection that never sent a byte, rather than wait on it", async () => {
    const { app, port } = await listening();
    const { ready, closed } = rawConnection(port);
    await ready;
    // The server has taken the connection before it closes.
    await new Promise<void>((resolve) =>
      app.server.getConnections((_e, count) => (count > 0 ? resolve() : setTimeout(resolve, 50))),
    );
    await app.close();
    await closed;
  });

  it("closes a connection that sent part of a request's head, whose request never arrived", async () => {
    const { app, port } = await listening();
    const { socket, ready, closed } = rawConnection(port);
    await ready;
    socket.write("GET /health HTTP/1.1\r\nHost: x\r\n");
    await new Promise((resolve) => setTimeout(resolve, 50));
    await app.close();
    await closed;
  });
});

describe("connections", () => {
  it("are read by Node's own HTTP parser, which no plugin takes over by listening for their data", async () => {
    // Node's parser reads a socket in C++ until a 'data' or 'readable' listener is added to it;
    // from then on every read goes through JS streams, which cost a cached hit 15–30 % of its
    // requests a second here. `_consumed` is how Node marks the first (node:_http_server).
    const { app, port } = await listening();
    const parsers: { _consumed?: boolean }[] = [];
    app.server.on("request", (request: { socket: { parser?: { _consumed?: boolean } } }) => {
      if (request.socket.parser) parsers.push(request.socket.parser);
    });
    for (const path of ["/health", "/api/endpoints/functions.invocation-stats?project=default"]) {
      const answer = await fetch(`http://127.0.0.1:${port}${path}`, {
        headers: { "x-api-key": KEY },
      });
      await answer.arrayBuffer();
    }
    expect(parsers.map((parser) => parser._consumed)).toEqual([true, true]);
  });
});

describe("bodies", () => {
  it("refuses a 50 MB body on GET after reading a bounded part of it, and closes the socket", async () => {
    const { port } = await listening();
    const { socket, closed, ready, received } = rawConnection(port);
    await ready;
    const size = 50 * 1024 * 1024;
    socket.write(`GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: ${size}\r\n\r\n`);
    const chunk = Buffer.alloc(64 * 1024, 120);
    let written = 0;
    while (written < size && !socket.destroyed) {
      const more = socket.write(chunk);
      written += chunk.length;
      if (!more) {
        await Promise.race([
          new Promise((resolve) => socket.once("drain", resolve)),
          closed,
          new Promise((resolve) => setTimeout(resolve, 1_000)),
        ]);
        if (socket.writableNeedDrain) break;
      }
    }
    await closed;
    expect(parseResponse(received())).toMatchObject({
      status: 413,
      body: { error: { code: "payload_too_large" } },
    });
    // What the kernel's socket buffers took before the server closed: far from all of it.
    expect(written).toBeLessThan(size / 2);
  });
});

describe("a connection cap", () => {
  it("closes connections past HTTP_MAX_CONNECTIONS at once, counts them, and the management port still answers", async () => {
    const { app, engine } = await listening({ http: { maxConnections: 2 } });
    const port = (app.server.address() as { port: number }).port;
    const held = [rawConnection(port), rawConnection(port)];
    await Promise.all(held.map((connection) => connection.ready));
    const refused = rawConnection(port);
    await refused.closed;
    // Closed for the cap, not for a timeout: the two it let in, as silent, are still open.
    expect(held.map((connection) => connection.socket.destroyed)).toEqual([false, false]);
    expect(refused.received()).toBe("");
    const management = await buildManagementApp({ engine, registry: app.metricsRegistry });
    closing.unshift(() => management.close());
    await management.listen({ port: 0, host: "127.0.0.1" });
    const managementPort = (management.server.address() as { port: number }).port;
    const health = await fetch(`http://127.0.0.1:${managementPort}/health`);
    expect(health.status).toBe(200);
    const unknown = await fetch(`http://127.0.0.1:${managementPort}/nothing`);
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get("x-request-id")).toEqual(expect.any(String));
    expect(await unknown.json()).toMatchObject({ error: { code: "not_found" } });
    const metrics = await (await fetch(`http://127.0.0.1:${managementPort}/metrics`)).text();
    expect(metrics).toMatch(/^query_service_http_connections_refused_total 1$/m);
    expect(metrics).toMatch(/^query_service_http_connections_open 2$/m);
    for (const connection of held) connection.socket.destroy();
  });
});

describe("the management listener", () => {
  it("answers probes' HEAD as their GET, and other methods 405 with Allow, as the main listener does", async () => {
    const { app, engine } = await listening();
    const management = await buildManagementApp({ engine, registry: app.metricsRegistry });
    closing.unshift(() => management.close());
    const base = await management.listen({ port: 0, host: "127.0.0.1" });
    for (const path of ["/health", "/ready", "/metrics"]) {
      const head = await fetch(`${base}${path}`, { method: "HEAD" });
      expect(head.status, path).toBe(200);
      expect(await head.text(), path).toBe("");
      const post = await fetch(`${base}${path}`, { method: "POST" });
      expect(post.status, path).toBe(405);
      expect(post.headers.get("allow"), path).toBe("GET, HEAD");
      expect(await post.json(), path).toMatchObject({ error: { code: "method_not_allowed" } });
    }
  });
});

describe("framing errors", () => {
  it.each([
    [
      "Content-Length with Transfer-Encoding",
      "POST /health HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
      400,
    ],
    ["two Host headers", "GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400],
    [
      "bad chunking",
      "POST /health HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
      400,
    ],
  ])("answers %s in the envelope with a request id", async (_case, bytes, status) => {
    const { port } = await listening();
    const { socket, closed, ready, received } = rawConnection(port);
    await ready;
    socket.end(bytes);
    await closed;
    const response = parseResponse(received());
    expect(response.status).toBe(status);
    expect(response.body).toEqual({ error: { code: "bad_request", message: expect.any(String) } });
    expect(response.headers).toContain("x-request-id:");
  });
});

describe("load shedding", () => {
  it("answers 503 overloaded with Retry-After while the event loop lags, and spares /health", async () => {
    const { port } = await listening(
      {},
      { pressure: { maxEventLoopDelayMs: 30, sampleIntervalMs: 10 } },
    );
    // Hold the event loop again and again, as bursts of synchronous work would, until a request is
    // shed: a single block can be over before a loaded machine delivers the request.
    const hold = () => {
      const until = Date.now() + 60;
      while (Date.now() < until) {
        // Busy.
      }
    };
    const lagging = setInterval(hold, 5);
    let shed: Response;
    try {
      for (;;) {
        shed = await fetch(`http://127.0.0.1:${port}/api/endpoints`, {
          headers: { "x-api-key": KEY },
        });
        if (shed.status !== 200) break;
        await shed.arrayBuffer();
      }
    } finally {
      clearInterval(lagging);
    }
    expect(shed.status).toBe(503);
    expect(shed.headers.get("retry-after")).toBe("1");
    expect(await shed.json()).toEqual({
      error: { code: "overloaded", message: expect.any(String) },
    });
    expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200);
  });
});

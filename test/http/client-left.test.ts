// A request whose client closed it before its answer: the service sends nothing (there is no one to
// read it), and still leaves one log line and a count, as it does for every answered request.
import { pino } from "pino";
import { beforeAll, expect, it } from "vitest";
import { demoApp } from "../support/demo-app.ts";

const KEY = "client-left-key-0123456789abcdef";

const logged: Record<string, unknown>[] = [];
let started: () => void;
const queryStarted = new Promise<void>((resolve) => {
  started = resolve;
});

const demo = demoApp(
  { auth: { apiKeys: [KEY] } },
  {
    logger: pino({ level: "info" }, { write: (line: string) => logged.push(JSON.parse(line)) }),
  },
  // The engine holds usage.api-counts until its caller stops waiting, as a long query would.
  (duck) => ({
    dialect: duck.dialect,
    ping: () => duck.ping(),
    close: async () => {},
    async run(request) {
      if (request.endpoint === "usage.api-counts") {
        started();
        await new Promise((_, reject) =>
          request.signal?.addEventListener("abort", () => reject(request.signal?.reason)),
        );
      }
      return duck.run(request);
    },
  }),
);
let base: string;
beforeAll(async () => {
  base = await demo.app.listen({ host: "127.0.0.1", port: 0 });
});

it("logs a request whose client left as one info line with its id, and counts it as 499", async () => {
  const leaving = new AbortController();
  const asked = fetch(`${base}/api/endpoints/usage.api-counts?project=default&interval=daily`, {
    headers: { "x-api-key": KEY },
    signal: leaving.signal,
  }).catch(() => "left");
  await queryStarted;
  leaving.abort();
  expect(await asked).toBe("left");

  await expect
    .poll(() => logged.filter((line) => line.path === "/api/endpoints/usage.api-counts"))
    .toEqual([
      expect.objectContaining({
        level: 30,
        reqId: expect.any(String),
        status: 499,
        msg: "client left",
      }),
    ]);
  expect(logged.filter((line) => (line.level as number) >= 50)).toEqual([]);
  const metrics = await demo.app.inject({ url: "/metrics", headers: { "x-api-key": KEY } });
  expect(metrics.body).toContain(
    'query_service_requests_total{endpoint="usage.api-counts",status="499"} 1\n',
  );
});

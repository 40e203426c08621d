// A webhook receiver for tests: a real HTTP server that records every delivery and answers each
// with the next status of a script (then 200), closed after the test.
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, expect } from "vitest";

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

/** A delivery's body, as the Standard Webhooks shape and the alert's data make it. */
export interface Message {
  type: string;
  timestamp: string;
  data: { rule: string; state: string; since: string; rows: Record<string, unknown>[] };
}

const open: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of open.splice(0)) await close();
});

/** A receiver whose first answers are `statuses`, then 200 to everything; on `port`, or any free one. */
export async function webhookReceiver(statuses: number[] = [], port = 0) {
  const received: Received[] = [];
  const script = [...statuses];
  const server = createServer((request, response) => {
    let body = "";
    request.setEncoding("utf8");
    request.on("data", (chunk) => {
      body += chunk;
    });
    request.on("end", () => {
      received.push({ headers: request.headers, body });
      response.writeHead(script.shift() ?? 200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  open.push(() => new Promise((resolve) => server.close(() => resolve())));
  const listening = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${listening}/hooks/alerts`,
    received,
    /** The deliveries' bodies, parsed. */
    messages: () => received.map(({ body }) => JSON.parse(body) as Message),
    until: (count: number) =>
      expect
        .poll(() => received.length, { timeout: 10_000, interval: 20 })
        .toBeGreaterThanOrEqual(count),
  };
}

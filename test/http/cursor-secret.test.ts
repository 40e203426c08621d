// Page cursors and event ids are signed under the service's secret (CURSOR_SECRET): one made up by
// whoever knows the format is a 400 as a page cursor and as Last-Event-ID, and replicas take each
// other's cursors only when they share the secret.
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serviceApp } from "../../src/app.ts";
import { createDuckDbEngine, type DuckDbEngine } from "../../src/engines/duckdb.ts";
import { configFrom } from "../support/config-from.ts";
import { replaceTables } from "../support/duckdb-tables.ts";
import { edgeLog, micros, PROJECT, SECOND, shift } from "../support/fixtures.ts";
import type { Row } from "../support/googlesql.ts";
import { API_KEY } from "../support/service.ts";
import { unkeyedCursor } from "../support/unkeyed-cursor.ts";

const NOW = "2026-11-21T05:17:42.123456Z";
const SECRET = "cursor-secret-shared-by-replicas-0123";
const PAGE = `/api/endpoints/logs.all?project=${PROJECT}&project_tier=FREE`;
const FOLLOW = `/api/endpoints/logs.all/follow?project=${PROJECT}&project_tier=FREE`;
// A page and a half of records, a second apart.
const RECORDS: Row[] = Array.from({ length: 150 }, (_, i) =>
  edgeLog(shift(NOW, -BigInt(i + 1) * SECOND), { id: `rec-${i}` }),
);

let engine: DuckDbEngine;
const apps: FastifyInstance[] = [];
beforeAll(async () => {
  engine = await createDuckDbEngine({ now: () => micros(NOW) });
  await replaceTables(engine, { edge_logs: RECORDS });
}, 60_000);
afterAll(async () => {
  for (const app of apps) await app.close();
  await engine?.close();
});

async function replica(cursorSecret?: string): Promise<FastifyInstance> {
  const app = await serviceApp(configFrom({ auth: { apiKeys: [API_KEY] }, cursorSecret }), {
    engine,
  });
  apps.push(app);
  return app;
}

const get = (app: FastifyInstance, url: string, headers: Record<string, string> = {}) =>
  app.inject({ url, headers: { "x-api-key": API_KEY, ...headers } });

/** The cursor a full page links on with. */
function nextCursor(page: LightMyRequestResponse): string {
  return /cursor=([\w-]+)>/.exec(page.headers.link as string)?.[1] as string;
}

function expectRefusedCursor(response: LightMyRequestResponse) {
  expect(response.statusCode, response.body.slice(0, 200)).toBe(400);
  expect(JSON.parse(response.body).error).toMatchObject({
    code: "invalid_params",
    details: [{ param: "cursor", message: expect.stringContaining("not a cursor") }],
  });
}

function expectRefusedEventId(response: LightMyRequestResponse) {
  expect(response.statusCode, response.body.slice(0, 200)).toBe(400);
  expect(JSON.parse(response.body).error).toEqual({
    code: "bad_request",
    message: "Last-Event-ID is not an event id of this service's streams.",
  });
}

describe("a cursor of the right form, made up without the secret", () => {
  it("is a 400 as a page cursor and as Last-Event-ID, where the service's own is taken", async () => {
    const app = await replica(SECRET);
    const first = await get(app, PAGE);
    const last = (JSON.parse(first.body).result as Row[]).at(-1) as Row;
    const position = { timestamp: String(last.timestamp), id: String(last.id) };
    expect(position.id).toBe("rec-99");

    const forged = unkeyedCursor(position);
    expectRefusedCursor(await get(app, `${PAGE}&cursor=${forged}`));
    expectRefusedEventId(await get(app, FOLLOW, { "last-event-id": forged }));

    const next = await get(app, `${PAGE}&cursor=${nextCursor(first)}`);
    expect(next.statusCode).toBe(200);
    expect((JSON.parse(next.body).result as Row[]).map((row) => row.id)).toEqual(
      RECORDS.slice(100).map((row) => row.id),
    );
  });
});

describe("replicas", () => {
  it("take each other's cursors with the same CURSOR_SECRET, and refuse those of another or none", async () => {
    const [made, same, other, none] = [
      await replica(SECRET),
      await replica(SECRET),
      await replica("another-secret-of-another-service-0123"),
      await replica(),
    ] as [FastifyInstance, FastifyInstance, FastifyInstance, FastifyInstance];
    const cursor = nextCursor(await get(made, PAGE));

    const elsewhere = await get(same, `${PAGE}&cursor=${cursor}`);
    expect(elsewhere.statusCode).toBe(200);
    expect(elsewhere.body).toBe((await get(made, `${PAGE}&cursor=${cursor}`)).body);
    for (const refusing of [other, none]) {
      expectRefusedCursor(await get(refusing, `${PAGE}&cursor=${cursor}`));
      expectRefusedEventId(await get(refusing, FOLLOW, { "last-event-id": cursor }));
    }
  });
});

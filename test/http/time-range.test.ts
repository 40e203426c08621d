// Any time range a dashboard asks for, as HTTP clients see it on the bucketed endpoints: `from` and
// `to` (epoch milliseconds or RFC 3339) in place of the span parameter, the bucket chosen from the
// ladder or named, every refusal a 400 naming its parameter, and ranges a cache can hold: aligned to
// their bucket, a settled one kept a day and never warmed. The service's clock (where `to` defaults
// and what is settled) is pinned to NOW; the cache's is a variable the tests move.
import { afterEach, describe, expect, it, vi } from "vitest";
import { cachedBigQueryService, cachedService } from "../support/cached-service.ts";
import {
  edgeRequests,
  functionCall,
  HOUR,
  MINUTE,
  micros,
  PROJECT,
  request,
  shift,
} from "../support/fixtures.ts";

const NOW = "2026-11-21T05:17:42.123456Z";
const SECOND_MS = 1000;
const STATS = `/api/endpoints/functions.invocation-stats?project=${PROJECT}`;
const USAGE = `/api/endpoints/usage.api-counts?project=${encodeURIComponent(`^https://${PROJECT}\\.`)}`;
/** Epoch milliseconds, as Grafana's ${__from} and ${__to} give them. */
const ms = (iso: string) => String(micros(iso) / 1000n);

const TABLES = {
  function_edge_logs: Array.from({ length: 48 }, (_, i) =>
    functionCall(shift(NOW, -BigInt(i) * 10n * MINUTE)),
  ),
  edge_logs: Array.from({ length: 48 }, (_, i) =>
    edgeRequests(shift(NOW, -BigInt(i) * 10n * MINUTE), request("/rest/v1/todos")),
  ),
};

afterEach(() => {
  vi.useRealTimers();
});

async function service() {
  return cachedService(NOW, TABLES, undefined, { follow: { clock: () => micros(NOW) } });
}

const timestamps = (body: string) =>
  (JSON.parse(body).result as { timestamp: string }[]).map(({ timestamp }) => timestamp);

describe("a time range", () => {
  it("answers the buckets of the range, the smallest of the ladder that fits max_points, and to defaults to now", async () => {
    const { service: s } = await service();
    // 6 hours in at most 300 buckets: 5 minutes (1 minute would give 361).
    const sixHours = await s.get(`${STATS}&from=${ms("2026-11-20T23:17:42Z")}&to=${ms(NOW)}`);
    expect(sixHours.statusCode).toBe(200);
    const stamps = timestamps(sixHours.body);
    // Aligned to the bucket: the first is the one `from` falls in.
    expect(stamps[0]).toBe("2026-11-20T23:15:00.000000Z");
    expect(stamps.at(-1)).toBe("2026-11-21T05:15:00.000000Z");
    for (const stamp of stamps) expect(micros(stamp) % (5n * MINUTE)).toBe(0n);
    // The same range in RFC 3339, `to` left to now: the same answer.
    const rfc = await s.get(`${STATS}&from=2026-11-20T23:17:42Z`);
    expect(rfc.body).toBe(sixHours.body);
    // Fewer points, a larger bucket: 6 hours in at most 10 is one bucket an hour.
    const hourly = await s.get(`${STATS}&from=2026-11-20T23:17:42Z&max_points=10`);
    expect(timestamps(hourly.body)).toEqual(
      Array.from({ length: 7 }, (_, i) => shift("2026-11-20T23:00:00.000000Z", BigInt(i) * HOUR)),
    );
  });

  it("takes the bucket a dashboard names when its points fit, on both bucketed endpoints", async () => {
    const { service: s } = await service();
    for (const base of [STATS, USAGE]) {
      const answer = await s.get(
        `${base}&from=2026-11-21T00:00:00Z&to=2026-11-21T06:00:00Z&bucket=1h`,
      );
      expect(answer.statusCode, base).toBe(200);
      const stamps = timestamps(answer.body).map((stamp) => stamp.replace(/(\.0+)?Z?$/, ""));
      expect(stamps, base).toEqual([
        "2026-11-21T00:00:00",
        "2026-11-21T01:00:00",
        "2026-11-21T02:00:00",
        "2026-11-21T03:00:00",
        "2026-11-21T04:00:00",
        "2026-11-21T05:00:00",
      ]);
    }
  });

  it.each([
    ["from", "from=yesterday", /epoch milliseconds .* RFC 3339/],
    ["from", "from=2026-11-21T05:00:00Z&to=2026-11-21T04:00:00Z", /before to/],
    ["from", "from=2026-11-22T00:00:00Z", /before to \(now\)/],
    ["from", "from=2026-08-01T00:00:00Z", /90d before now/],
    ["to", "to=2026-11-21T04:00:00Z", /with from only/],
    ["bucket", "bucket=1h", /with from only/],
    ["bucket", "from=2026-11-21T00:00:00Z&bucket=1s", /buckets over this range, more than 300/],
    ["bucket", "from=2026-11-21T00:00:00Z&bucket=500ms", /whole number and a unit/],
    ["bucket", "from=2026-11-21T00:00:00Z&bucket=8d", /at most 7d, the largest/],
    ["bucket", "from=2026-11-21T00:00:00Z&bucket=36500d", /at most 7d, the largest/],
    ["bucket", "from=2026-11-21T00:00:00Z&bucket=9999999999d", /at most 7d, the largest/],
    ["to", "from=2026-11-21T00:00:00Z&to=253402300800000", /epoch milliseconds .* RFC 3339/],
    ["from", "from=999999999999999", /epoch milliseconds .* RFC 3339/],
    ["max_points", "from=2026-11-21T00:00:00Z&max_points=1001", /at most 1000/],
    ["max_points", "from=2026-08-25T00:00:00Z&max_points=1", /cannot hold this range/],
    ["interval", "from=2026-11-21T00:00:00Z&interval=1hr", /interval or from, not both/],
    ["interval", "", /^required: window and bucket size/],
  ])("is refused by a 400 naming %s: %s", async (param, query, message) => {
    const { service: s, engine } = await service();
    const answer = await s.get(`${STATS}&${query}`);
    expect(answer.statusCode).toBe(400);
    expect(answer.json().error.details).toContainEqual({
      param,
      message: expect.stringMatching(message),
    });
    expect(engine.runs).toBe(0);
  });

  it("is aligned to its bucket: every refresh of a moving range within one bucket is one cached answer", async () => {
    const { service: s, engine } = await service();
    // A "last 6 hours" panel refreshed every 10 s for the 5 minutes of one bucket.
    const start = micros("2026-11-20T23:15:00Z");
    const answers = [];
    for (let refresh = 0n; refresh < 30n; refresh++) {
      const at = start + refresh * 10_000_000n;
      answers.push(await s.get(`${STATS}&from=${at / 1000n}&to=${(at + 6n * HOUR) / 1000n}`));
    }
    expect(engine.runs).toBe(1);
    expect(new Set(answers.map((answer) => answer.headers.etag)).size).toBe(1);
    expect(answers.slice(1).map((answer) => answer.headers["x-cache"])).toEqual(
      Array(29).fill("HIT"),
    );
  });

  it("that ended before the settled horizon is kept a day and never warmed; one reaching now is warmed like its span", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const { service: s, engine, clock } = await service();
    const settled = `${STATS}&from=2026-11-20T00:00:00Z&to=2026-11-20T12:00:00Z`;
    const live = `${STATS}&from=2026-11-21T00:00:00Z`;
    // Twice each: only keys in use are warmed.
    for (const path of [settled, settled, live, live]) await s.get(path);
    expect(engine.runs).toBe(2);
    const kept = await s.get(settled);
    expect(kept.headers["cache-control"]).toBe("private, max-age=86400");
    expect((await s.get(live)).headers["cache-control"]).toBe("private, max-age=900");
    clock.ms += 300 * SECOND_MS;
    await vi.advanceTimersByTimeAsync(300 * SECOND_MS);
    await vi.waitFor(() => expect(engine.settled).toBe(3));
    // The live range's refresh alone; the settled one is still the first value, same ETag.
    expect(engine.runs).toBe(3);
    const later = await s.get(settled);
    expect(later.headers.etag).toBe(kept.headers.etag);
    expect(later.headers["x-cache"]).toBe("HIT");
  });
});

describe("a time range on BigQuery", () => {
  it("is one job, bound to its aligned bounds, the partitioning column compared with them", async () => {
    const { service: s } = await cachedBigQueryService(NOW, TABLES, undefined, {
      follow: { clock: () => micros(NOW) },
    });
    const answer = await s.get(
      `${STATS}&from=2026-11-21T00:10:00Z&to=2026-11-21T04:50:00Z&bucket=1h`,
    );
    expect(answer.statusCode).toBe(200);
    expect(timestamps(answer.body)).toEqual(
      Array.from({ length: 5 }, (_, i) => shift("2026-11-21T00:00:00.000000Z", BigInt(i) * HOUR)),
    );
    expect(s.standIn.queryCalls).toHaveLength(1);
    const parameters = (s.standIn.queryCalls[0]?.body.queryParameters ?? []) as {
      name: string;
      parameterValue: { value: unknown };
    }[];
    const sent = Object.fromEntries(
      parameters.map(({ name, parameterValue }) => [name, parameterValue.value]),
    );
    expect(sent).toMatchObject({
      interval: null,
      window_start: "2026-11-21T00:00:00.000000Z",
      last_bucket: "2026-11-21T04:00:00.000000Z",
      window_end: "2026-11-21T04:59:59.999999Z",
      bucket_seconds: "3600",
    });
  });
});

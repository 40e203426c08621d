// GET …/logs.all/follow over real HTTP: records arriving while a stream is open reach it once, oldest
// first, whatever the engine, with reconnects, late records, shared polls, limits and shutdown.
import { EventSource } from "eventsource";
import { SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { serviceApp } from "../../src/app.ts";
import { createTokenVerifier } from "../../src/credentials/tokens.ts";
import { createDuckDbEngine } from "../../src/engines/duckdb.ts";
import type { QueryEngine } from "../../src/engines/engine.ts";
import { configFrom } from "../support/config-from.ts";
import { replaceTables } from "../support/duckdb-tables.ts";
import { edgeLog, MICROSECOND, micros, OTHER_PROJECT, SECOND, shift } from "../support/fixtures.ts";
import {
  closers,
  FOLLOW,
  FOLLOW_CLOCK,
  NOW,
  open,
  QUERY,
  records,
  type Stream,
} from "../support/follow-client.ts";
import type { Row } from "../support/googlesql.ts";
import { API_KEY, type BigQueryServiceOptions, startBigQueryService } from "../support/service.ts";

const OLDER = [edgeLog(shift(NOW, -10n * SECOND), { id: "before-connecting" })];

/** A burst of records after NOW, in a scrambled order, several sharing a timestamp. */
function burst(count: number, prefix: string, from = NOW): Row[] {
  return Array.from({ length: count }, (_, i) =>
    edgeLog(shift(from, BigInt(1 + Math.floor(i / 3)) * MICROSECOND), {
      id: `${prefix}-${(i * 37) % count}`,
    }),
  ).reverse();
}

/** Ascending (timestamp, id by bytes): the order a stream sends. */
function expectAscending(rows: Row[]) {
  for (let i = 1; i < rows.length; i++) {
    const [a, b] = [rows[i - 1] as Row, rows[i] as Row];
    const order =
      micros(a.timestamp as string) === micros(b.timestamp as string)
        ? Buffer.compare(Buffer.from(String(a.id)), Buffer.from(String(b.id)))
        : micros(a.timestamp as string) < micros(b.timestamp as string)
          ? -1
          : 1;
    expect(order, `${a.id} before ${b.id}`).toBe(-1);
  }
}

async function bigQueryService(options: BigQueryServiceOptions) {
  const service = await startBigQueryService(options);
  const base = await service.app.listen({ host: "127.0.0.1", port: 0 });
  const add = (rows: Row[]) => {
    service.standIn.tables = {
      ...service.standIn.tables,
      edge_logs: [...(service.standIn.tables.edge_logs ?? []), ...rows],
    };
  };
  return { ...service, base, add };
}

describe("a follow stream on BigQuery", () => {
  it("delivers a burst of 250 records arriving while it is open, each once, oldest first", async () => {
    const { base, add } = await bigQueryService({
      now: NOW,
      tables: { edge_logs: OLDER },
      config: { follow: FOLLOW },
      follow: FOLLOW_CLOCK,
    });
    const stream = await open(`${base}/api/endpoints/logs.all/follow?${QUERY}`);
    const arriving = burst(250, "burst");
    add(arriving);
    await stream.until(() => records(stream).length >= 250);
    const sent = records(stream);
    expect(sent.map((r) => r.id).sort()).toEqual(arriving.map((r) => r.id).sort());
    expectAscending(sent);
    // Each event's id is the cursor a reconnect resumes after.
    expect(stream.events.every((e) => /^[\w-]+$/.test(e.id ?? ""))).toBe(true);
  });

  it("resumes after Last-Event-ID: nothing lost, nothing repeated", async () => {
    const { base, add } = await bigQueryService({
      now: NOW,
      tables: { edge_logs: OLDER },
      config: { follow: FOLLOW },
      follow: FOLLOW_CLOCK,
    });
    const url = `${base}/api/endpoints/logs.all/follow?${QUERY}`;
    const first = await open(url);
    const before = burst(20, "first");
    add(before);
    await first.until(() => records(first).length === 20);
    first.close();
    const seen = records(first).slice(0, 8);
    const lastEventId = first.events.filter((e) => e.event === undefined)[7]?.id as string;
    const later = burst(15, "later", shift(NOW, SECOND));
    add(later);

    const resumed = await open(url, { "last-event-id": lastEventId });
    await resumed.until(() => records(resumed).length === 35 - 8);
    const all = [...seen, ...records(resumed)];
    expect(all.map((r) => r.id).sort()).toEqual([...before, ...later].map((r) => r.id).sort());
    expectAscending(all);
  });

  it("says where it starts in a start event: resumed from there, it sends what came meanwhile", async () => {
    const { base, add } = await bigQueryService({
      now: NOW,
      tables: { edge_logs: OLDER },
      config: { follow: FOLLOW },
      follow: FOLLOW_CLOCK,
    });
    const url = `${base}/api/endpoints/logs.all/follow?${QUERY}`;
    const first = await open(url);
    await first.until(() => first.frames.length === 1);
    // With data: eventsource-parser keeps no id that comes alone.
    const [opening] = first.events;
    expect(opening).toEqual({
      event: "start",
      id: expect.stringMatching(/^[\w-]+$/),
      data: JSON.stringify({ from: NOW, resumed: false }),
    });
    first.close();
    const meanwhile = burst(5, "meanwhile", shift(NOW, SECOND));
    add(meanwhile);

    const resumed = await open(url, { "last-event-id": opening?.id as string });
    await resumed.until(() => records(resumed).length === 5);
    expect(
      records(resumed)
        .map((r) => r.id)
        .sort(),
    ).toEqual(meanwhile.map((r) => r.id).sort());
  });

  it("starts from iso_timestamp_start with every record after it, then goes live", async () => {
    const history = [
      edgeLog(shift(NOW, -3n * SECOND), { id: "history-1" }),
      edgeLog(shift(NOW, -2n * SECOND), { id: "history-2" }),
    ];
    const { base, add } = await bigQueryService({
      now: NOW,
      tables: { edge_logs: [...OLDER, ...history] },
      config: { follow: FOLLOW },
      follow: FOLLOW_CLOCK,
    });
    const start = encodeURIComponent(shift(NOW, -5n * SECOND));
    const stream = await open(
      `${base}/api/endpoints/logs.all/follow?${QUERY}&iso_timestamp_start=${start}`,
    );
    await stream.until(() => records(stream).length === 2);
    add(burst(3, "live"));
    await stream.until(() => records(stream).length === 5);
    expect(records(stream).map((r) => r.id)).toEqual([
      "history-1",
      "history-2",
      "live-0",
      "live-1",
      "live-2",
    ]);
  });

  it("delivers a record that arrives late, within the lag, once", async () => {
    const { base, add } = await bigQueryService({
      now: NOW,
      tables: { edge_logs: OLDER },
      config: { follow: FOLLOW },
      follow: FOLLOW_CLOCK,
    });
    const stream = await open(`${base}/api/endpoints/logs.all/follow?${QUERY}`);
    add([edgeLog(shift(NOW, 40n * SECOND), { id: "newest" })]);
    await stream.until(() => records(stream).length === 1);
    add([edgeLog(shift(NOW, 10n * SECOND), { id: "late" })]);
    await stream.until(() => records(stream).length === 2);
    add([edgeLog(shift(NOW, 20n * SECOND), { id: "later-still" })]);
    await stream.until(() => records(stream).length === 3);
    expect(records(stream).map((r) => r.id)).toEqual(["newest", "late", "later-still"]);
  });

  it("shares one poll between followers of the same parameters", async () => {
    const { base, add, get, standIn } = await bigQueryService({
      now: NOW,
      tables: { edge_logs: OLDER },
      config: { follow: FOLLOW },
      follow: FOLLOW_CLOCK,
    });
    const url = `${base}/api/endpoints/logs.all/follow?${QUERY}`;
    const [one, two] = [await open(url), await open(url)];
    add(burst(5, "shared"));
    await one.until(() => records(one).length === 5 && records(two).length === 5);
    const metrics = (await get("/metrics")).body;
    const polls = Number(/^query_service_follow_polls_total (\d+)$/m.exec(metrics)?.[1]);
    const queries = standIn.queryCalls.length;
    // Every engine query was one poll of the one feed (a poll in flight may have started since).
    expect(queries).toBeGreaterThan(0);
    expect(Math.abs(queries - polls)).toBeLessThanOrEqual(1);
    expect(metrics).toMatch(/^query_service_follow_feeds 1$/m);
    expect(metrics).toMatch(/^query_service_follow_streams_open 2$/m);
    expect(metrics).toMatch(/^query_service_follow_records_sent_total 10$/m);
  });

  it("refuses a fifth stream of one credential with 429, and frees its slot when one closes", async () => {
    const { base } = await bigQueryService({
      now: NOW,
      tables: { edge_logs: OLDER },
      config: { follow: FOLLOW },
      follow: FOLLOW_CLOCK,
    });
    const url = `${base}/api/endpoints/logs.all/follow?${QUERY}`;
    const streams: Stream[] = [];
    for (let i = 0; i < 4; i++) streams.push(await open(url));
    const fifth = await fetch(url, { headers: { "x-api-key": API_KEY } });
    expect(fifth.status).toBe(429);
    expect(((await fifth.json()) as { error: { code: string } }).error.code).toBe("rate_limited");
    streams[0]?.close();
    await expect
      .poll(async () => {
        const retry = await fetch(url, { headers: { "x-api-key": API_KEY } });
        if (retry.status === 200) closers.push(() => retry.body?.cancel());
        return retry.status;
      })
      .toBe(200);
  });

  it("ends every stream with event: end when the service shuts down", async () => {
    const { app, base } = await bigQueryService({
      now: NOW,
      tables: { edge_logs: OLDER },
      config: { follow: FOLLOW },
      follow: FOLLOW_CLOCK,
    });
    const stream = await open(`${base}/api/endpoints/logs.all/follow?${QUERY}`);
    await app.close();
    await stream.ended;
    // The end names where the stream got to: its start, as no record came.
    const start = stream.events.find((event) => event.event === "start");
    expect(stream.events.at(-1)).toEqual({
      event: "end",
      data: JSON.stringify({ reason: "shutting_down", cursor: start?.id }),
    });
  });

  it("streams NDJSON lines for Accept: application/x-ndjson", async () => {
    const { base, add } = await bigQueryService({
      now: NOW,
      tables: { edge_logs: OLDER },
      config: { follow: FOLLOW },
      follow: FOLLOW_CLOCK,
    });
    const stream = await open(`${base}/api/endpoints/query/logs.all/follow?${QUERY}`, {
      accept: "application/x-ndjson",
    });
    add(burst(3, "line"));
    await stream.until(() => stream.lines.length === 3);
    expect(stream.lines.map((line) => JSON.parse(line).id)).toEqual(["line-0", "line-1", "line-2"]);
  });

  it("refuses iso_timestamp_end and cursor, and answers 404 for an endpoint that cannot be followed", async () => {
    const { get } = await bigQueryService({
      now: NOW,
      tables: { edge_logs: OLDER },
      config: { follow: FOLLOW },
      follow: FOLLOW_CLOCK,
    });
    const refused = await get(
      `/api/endpoints/logs.all/follow?${QUERY}&iso_timestamp_end=2026-11-21T05:00:00Z&cursor=x`,
    );
    expect(refused.statusCode).toBe(400);
    expect(JSON.parse(refused.body).error).toMatchObject({
      code: "invalid_params",
      details: [{ param: "iso_timestamp_end" }, { param: "cursor" }],
    });
    const stats = await get(
      "/api/endpoints/functions.invocation-stats/follow?project=p&interval=1hr",
    );
    expect(stats.statusCode).toBe(404);
    expect(JSON.parse(stats.body).error.code).toBe("endpoint_not_found");
  });

  it("ends a stream when the token that opened it expires", async () => {
    const secret = "a-test-secret-of-at-least-32-bytes!!";
    const exp = Math.floor(Date.now() / 1000) + 2;
    const token = await new SignJWT({ sub: "dashboard", scopes: [{ endpoint: "logs.all" }] })
      .setProtectedHeader({ alg: "HS256" })
      .setExpirationTime(exp)
      .sign(new TextEncoder().encode(secret));
    const { base } = await bigQueryService({
      now: NOW,
      tables: { edge_logs: OLDER },
      config: { follow: FOLLOW },
      follow: FOLLOW_CLOCK,
      tokens: createTokenVerifier({ secret, maxLifetimeSeconds: 3600 }),
    });
    const stream = await open(`${base}/api/endpoints/logs.all/follow?${QUERY}`, {
      authorization: `Bearer ${token}`,
    });
    await stream.ended;
    expect(stream.events.at(-1)).toEqual({
      event: "end",
      data: expect.stringMatching(/^{"reason":"token_expired","cursor":"[\w-]+"}$/),
    });
  });
});

describe("a follow stream on DuckDB", () => {
  it("delivers a burst of 250 records arriving while it is open, each once, oldest first", async () => {
    const engine = await createDuckDbEngine({ now: () => micros(NOW) });
    const others = [edgeLog(shift(NOW, SECOND), { id: "theirs", project: OTHER_PROJECT })];
    await replaceTables(engine, { edge_logs: [...OLDER, ...others] });
    const app = await serviceApp(configFrom({ auth: { apiKeys: [API_KEY] }, follow: FOLLOW }), {
      engine,
      follow: FOLLOW_CLOCK,
    });
    closers.push(async () => {
      await app.close();
      await engine.close();
    });
    const base = await app.listen({ host: "127.0.0.1", port: 0 });
    const stream = await open(`${base}/api/endpoints/logs.all/follow?${QUERY}`);
    const arriving = burst(250, "duck");
    await replaceTables(engine, { edge_logs: [...OLDER, ...others, ...arriving] });
    await stream.until(() => records(stream).length >= 250);
    const sent = records(stream);
    expect(sent.map((r) => r.id).sort()).toEqual(arriving.map((r) => r.id).sort());
    expectAscending(sent);
  });
});

describe("resuming a follow stream on DuckDB around late records", () => {
  // B, then L and L2, older than B but within the lag, each arriving after the one before was sent.
  const B = edgeLog(shift(NOW, 40n * SECOND), { id: "B" });
  const L = edgeLog(shift(NOW, 10n * SECOND), { id: "L" });
  const L2 = edgeLog(shift(NOW, 20n * SECOND), { id: "L2" });

  /** `wrap`: what the service sees of the engine (to hold a query's answer back). */
  async function duckDbService(wrap = (engine: QueryEngine) => engine) {
    const clock = { now: micros(NOW) };
    const engine = await createDuckDbEngine({ now: () => clock.now });
    const stored = [...OLDER];
    await replaceTables(engine, { edge_logs: stored });
    const app = await serviceApp(configFrom({ auth: { apiKeys: [API_KEY] }, follow: FOLLOW }), {
      engine: wrap(engine),
      follow: { clock: () => clock.now },
    });
    closers.push(async () => {
      await app.close();
      await engine.close();
    });
    const base = await app.listen({ host: "127.0.0.1", port: 0 });
    const polls = async () => {
      const metrics = (await app.inject({ url: "/metrics", headers: { "x-api-key": API_KEY } }))
        .body;
      return Number(/^query_service_follow_polls_total (\d+)$/m.exec(metrics)?.[1]);
    };
    return {
      app,
      clock,
      base,
      arrive: (...rows: Row[]) => {
        stored.push(...rows);
        return replaceTables(engine, { edge_logs: stored });
      },
      /** Resolves once two more polls ran: a stream's catch-up is over, and it polled since. */
      async settle() {
        const before = await polls();
        await expect.poll(polls, { timeout: 10_000, interval: 20 }).toBeGreaterThan(before + 1);
      },
    };
  }

  const recordIds = (stream: Stream) => records(stream).map((row) => row.id);

  it("ends an NDJSON stream with where it got to, which after= on the next deploy resumes from", async () => {
    const clock = { now: micros(NOW) };
    const engine = await createDuckDbEngine({ now: () => clock.now });
    closers.push(() => engine.close());
    const stored = [...OLDER];
    await replaceTables(engine, { edge_logs: stored });
    const arrive = (row: Row) => {
      stored.push(row);
      return replaceTables(engine, { edge_logs: stored });
    };
    const deploy = async () => {
      const app = await serviceApp(
        configFrom({
          auth: { apiKeys: [API_KEY] },
          cursorSecret: "a secret the deploys share, 32 characters or more",
          follow: FOLLOW,
        }),
        { engine, follow: { clock: () => clock.now } },
      );
      closers.push(() => app.close());
      return { app, base: await app.listen({ host: "127.0.0.1", port: 0 }) };
    };
    const ndjson = { accept: "application/x-ndjson" };
    const first = await deploy();
    const before = await open(`${first.base}/api/endpoints/logs.all/follow?${QUERY}`, ndjson);
    await arrive(B);
    await before.until(() => before.lines.length === 1);
    await first.app.close();
    await before.ended;
    const last = JSON.parse(before.lines.at(-1) as string) as {
      end: { reason: string; cursor: string };
    };
    expect(last.end.reason).toBe("shutting_down");

    // L arrives late while the service is replaced; the next deploy resumes after B, not before it.
    await arrive(L);
    const next = await deploy();
    const after = await open(
      `${next.base}/api/endpoints/logs.all/follow?${QUERY}&after=${last.end.cursor}`,
      ndjson,
    );
    await after.until(() => after.lines.length === 1);
    await arrive(L2);
    await after.until(() => after.lines.length === 2);
    expect(after.lines.map((line) => JSON.parse(line).id)).toEqual(["L", "L2"]);
  });

  it("sends each once, reconnecting after every event; after= on NDJSON and settled runs resume the same", async () => {
    const { clock, base, arrive, settle } = await duckDbService();
    const url = `${base}/api/endpoints/logs.all/follow?${QUERY}`;
    const opened = await open(url);
    await opened.until(() => opened.events.length === 1);
    opened.close();
    const ids = [opened.events[0]?.id as string];
    const received: unknown[] = [];
    for (const row of [B, L, L2]) {
      const stream = await open(url, { "last-event-id": ids.at(-1) as string });
      await arrive(row);
      await stream.until(() => records(stream).length > 0);
      await settle();
      received.push(...recordIds(stream));
      ids.push(stream.events.at(-1)?.id as string);
      stream.close();
    }
    expect(received).toEqual(["B", "L", "L2"]);

    // Each place, handed back as after= on NDJSON: what came after it in delivery order, once.
    const expected = [["L", "L2", "B"], ["L", "L2"], ["L2"], []];
    for (const [i, id] of ids.entries()) {
      const stream = await open(`${url}&after=${id}`, { accept: "application/x-ndjson" });
      await settle();
      stream.close();
      expect(stream.lines.map((line) => JSON.parse(line).id)).toEqual(expected[i]);
    }

    // Once all has settled, a settled run from B's place sends L and L2, and ends where the next
    // run finds nothing again.
    clock.now += 2n * 60n * SECOND;
    const run = async (after: string) => {
      const answer = await fetch(`${url}&until=settled&after=${after}`, {
        headers: { "x-api-key": API_KEY, accept: "application/x-ndjson" },
      });
      const lines = (await answer.text())
        .trimEnd()
        .split("\n")
        .map((line) => JSON.parse(line));
      return { ids: lines.slice(0, -1).map((line) => line.id), end: lines.at(-1).end };
    };
    const settled = await run(ids[1] as string);
    expect(settled.ids).toEqual(["L", "L2"]);
    expect((await run(settled.end.cursor)).ids).toEqual([]);
  });

  it("names at most 64 records in an id: a resume after a burst within the lag repeats none", async () => {
    const { base, arrive, settle } = await duckDbService();
    const url = `${base}/api/endpoints/logs.all/follow?${QUERY}`;
    const first = await open(url);
    await first.until(() => first.events.length === 1);
    await arrive(...burst(250, "burst"));
    await first.until(() => records(first).length === 250);
    const lastEventId = first.events.at(-1)?.id as string;
    expect(lastEventId.length).toBeLessThan(1100);
    first.close();

    const resumed = await open(url, { "last-event-id": lastEventId });
    await arrive(L2);
    await resumed.until(() => records(resumed).length > 0);
    await settle();
    expect(recordIds(resumed)).toEqual(["L2"]);
  });

  it("cuts a resumed id at the real places of the records it names: a late record with 26 newer ones survives two resumes", async () => {
    const { base, arrive, settle } = await duckDbService();
    const url = `${base}/api/endpoints/logs.all/follow?${QUERY}`;
    const spaced = (count: number, prefix: string, from: string, step: bigint) =>
      Array.from({ length: count }, (_, i) =>
        edgeLog(shift(from, BigInt(i + 1) * step), { id: `${prefix}-${i}` }),
      );
    const first = await open(url);
    await first.until(() => first.events.length === 1);
    await arrive(...spaced(40, "early", NOW, SECOND / 10n));
    await first.until(() => records(first).length === 40);
    first.close();

    // 65 records within the lag, 40 of them named by the id the second stream resumes from.
    const second = await open(url, { "last-event-id": first.events.at(-1)?.id as string });
    await arrive(...spaced(25, "newer", shift(NOW, 10n * SECOND), MICROSECOND));
    await second.until(() => records(second).length === 25);
    second.close();

    // Older than early-39 and the 25 newer ones only: 26, not past 64.
    const third = await open(url, { "last-event-id": second.events.at(-1)?.id as string });
    await arrive(edgeLog(shift(NOW, 3_950_000n * MICROSECOND), { id: "L" }));
    await settle();
    expect(recordIds(third)).toEqual(["L"]);
  });

  it("sends a follower that joins a busy feed after its catch-up what the feed saw meanwhile", async () => {
    // The resumed stream's catch-up read of history is answered (its first chunk: the rest is
    // streamed after) only once `release` is called. The feed polls every 40 ms meanwhile, so the
    // catch-up often ends while a poll that stops at its newest page is under way: the resumed
    // stream must still get L and the oldest busy records first, from the sweep its join asked for.
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { clock, base, arrive, settle } = await duckDbService((engine) => ({
      dialect: engine.dialect,
      ping: () => engine.ping(),
      close: () => engine.close(),
      async run(request) {
        const answer = await engine.run(request);
        if (request.params.iso_timestamp_end != null) await held;
        return answer;
      },
    }));
    const url = `${base}/api/endpoints/logs.all/follow?${QUERY}`;
    const first = await open(url);
    await first.until(() => first.events.length === 1);
    const early = edgeLog(shift(NOW, SECOND / 2n), { id: "early" });
    await arrive(early);
    await first.until(() => records(first).length === 1);

    clock.now += 10n * SECOND;
    const resumed = await open(url, { "last-event-id": first.events[0]?.id as string });
    // While it catches up, L arrives, then more records than a page: the feed polls all of them.
    await arrive(L);
    await first.until(() => records(first).length === 2);
    const busy = burst(120, "busy", shift(NOW, 20n * SECOND));
    await arrive(...busy);
    await first.until(() => records(first).length === 122);
    release();
    // The rest of its catch-up is streamed after the first chunk: as many as the first stream got
    // (on a loaded machine, more than two polls later), then two polls more for any sent twice.
    await resumed.until(() => records(resumed).length >= records(first).length);
    await settle();
    expect(recordIds(resumed)).toEqual(recordIds(first));
  });

  it("through the eventsource package, resumes from where it started after a drop before any record, its since notwithstanding", async () => {
    const { clock, base, arrive, settle, app } = await duckDbService();
    const source = new EventSource(`${base}/api/endpoints/logs.all/follow?${QUERY}&since=5s`, {
      fetch: (url, init) =>
        fetch(url, { ...init, headers: { ...init?.headers, "x-api-key": API_KEY } }),
    });
    closers.push(() => source.close());
    const received: string[] = [];
    source.addEventListener("message", (event) => received.push(JSON.parse(event.data).id));
    const starts: MessageEvent[] = [];
    source.addEventListener("start", (event) => starts.push(event));
    await expect.poll(() => starts.length).toBe(1);

    // The connection drops; 20 s pass, in which records older than the URL's since=5s arrive.
    app.server.closeAllConnections();
    clock.now += 20n * SECOND;
    await arrive(L);
    await arrive(L2);
    await expect.poll(() => starts.length, { timeout: 10_000 }).toBe(2);
    expect(JSON.parse(starts[1]?.data).resumed).toBe(true);
    await expect.poll(() => received.length).toBe(2);
    await settle();
    expect(received).toEqual(["L", "L2"]);
  });
});

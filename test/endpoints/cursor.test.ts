// The page cursor round-trips any position and refuses what it did not make under its secret; a
// follow stream's position round-trips too, and takes an event id made before positions were.
import { createHmac } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { cursorCodec } from "../../src/endpoints/cursor.ts";
import { MOST_DELIVERED, recordKey } from "../../src/endpoints/stream-position.ts";
import { formatTimestamp } from "../../src/time.ts";
import { unkeyedCursor } from "../support/unkeyed-cursor.ts";

const SECRET = "cursor-secret-of-this-test-0123456789";
const cursors = cursorCodec(SECRET);

// BigQuery's TIMESTAMP range in µs.
const instant = fc
  .bigInt({ min: -62_135_596_800_000_000n, max: 253_402_300_799_999_999n })
  .map(formatTimestamp);
const position = fc.record(
  {
    timestamp: instant,
    id: fc.string({ unit: "binary", maxLength: 40 }),
    // Where the paged window starts, carried for `since` (see params.ts).
    windowStart: instant,
    // Where the walk's next page waits in a kept BigQuery result.
    kept: fc.record({
      walk: fc.stringMatching(/^[\w-]{16}$/),
      place: fc.record(
        {
          jobId: fc.stringMatching(/^[\w-]{1,40}$/),
          location: fc.stringMatching(/^[\w-]{1,20}$/),
          pageToken: fc.string({ minLength: 1, maxLength: 80 }),
        },
        { requiredKeys: ["jobId", "pageToken"] },
      ),
    }),
  },
  { requiredKeys: ["timestamp", "id"] },
);

describe("page cursor", () => {
  it("names the position it was made from, whatever the id holds", () => {
    fc.assert(
      fc.property(position, (p) => {
        const cursor = cursors.encode(p);
        expect(cursor).toMatch(/^[\w-]+$/);
        expect(cursors.decode(cursor)).toEqual(p);
      }),
    );
  });

  it("is the position after a row: its timestamp and id, a missing id as the empty string", () => {
    const timestamp = "2026-11-21T05:17:42.123456Z";
    expect(cursors.decode(cursors.after({ timestamp, id: "rec-1" }))).toEqual({
      timestamp,
      id: "rec-1",
    });
    expect(cursors.decode(cursors.after({ timestamp, id: null }))).toEqual({ timestamp, id: "" });
    const windowStart = "2026-11-21T05:02:42.123456Z";
    expect(cursors.decode(cursors.after({ timestamp, id: "a:>1" }, windowStart))).toEqual({
      timestamp,
      id: "a:>1",
      windowStart,
    });
  });

  it("refuses any single-character edit of a cursor it made", () => {
    fc.assert(
      fc.property(position, fc.nat(), fc.constantFrom(..."AQgw_-09z"), (p, at, replacement) => {
        const cursor = cursors.encode(p);
        const i = at % cursor.length;
        const edited = cursor.slice(0, i) + replacement + cursor.slice(i + 1);
        // Base64url's last character may carry unused bits, so an edit there can leave the bytes.
        if (Buffer.from(edited, "base64url").equals(Buffer.from(cursor, "base64url"))) return;
        expect(cursors.decode(edited)).toBeUndefined();
      }),
    );
  });

  it("refuses a cursor made up with the unkeyed tag of earlier versions, or under another secret", () => {
    const other = cursorCodec("another-secret-of-this-test-0123456789");
    fc.assert(
      fc.property(position, (p) => {
        expect(cursors.decode(unkeyedCursor(p))).toBeUndefined();
        expect(cursors.decode(other.encode(p))).toBeUndefined();
        expect(cursorCodec(SECRET).decode(cursors.encode(p))).toEqual(p);
      }),
    );
  });

  it("leaves out a kept page past its bounds; a walk is its deployment and parameters, not its position", () => {
    const timestamp = "2026-11-21T05:17:42.123456Z";
    const walk = cursors.walkOf({ project: "p", status: null });
    const place = (pageToken: string) => ({ jobId: "job_1", pageToken });
    const kept = cursors.decode(
      cursors.after({ timestamp, id: "a" }, null, { walk, place: place("t".repeat(1024)) }),
    );
    expect(kept?.kept).toEqual({ walk, place: place("t".repeat(1024)) });
    const long = cursors.decode(
      cursors.after({ timestamp, id: "a" }, null, { walk, place: place("t".repeat(1025)) }),
    );
    expect(long).toEqual({ timestamp, id: "a" });
    const position = { cursor_timestamp: timestamp, cursor_id: "a", cursor_kept_page: "x" };
    expect(cursors.walkOf({ project: "p", status: null, ...position })).toBe(walk);
    expect(cursors.walkOf({ project: "p", status: "5xx" })).not.toBe(walk);
    expect(
      cursorCodec(SECRET, "project.other_dataset").walkOf({ project: "p", status: null }),
    ).not.toBe(walk);
  });

  it.each(["", "abc", "not a cursor", "%%%", "A".repeat(22), "A".repeat(40), "a".repeat(2000)])(
    "refuses %j",
    (text) => {
      expect(cursors.decode(text)).toBeUndefined();
    },
  );
});

describe("stream position", () => {
  const micros = fc.bigInt({ min: -62_135_596_800_000_000n, max: 253_402_300_799_999_999n });
  const streamPosition = fc
    .record({
      horizon: fc.record(
        { micros, id: fc.string({ unit: "binary", maxLength: 40 }) },
        { requiredKeys: ["micros"] },
      ),
      newest: micros,
      delivered: fc.array(fc.record({ micros, id: fc.string() }), { maxLength: MOST_DELIVERED }),
    })
    .map(({ horizon, newest, delivered }) => ({
      horizon,
      newest,
      // Oldest first, as a stream names them; each after the horizon's time.
      delivered: delivered
        .filter((record) => record.micros >= horizon.micros)
        .sort((a, b) => (a.micros < b.micros ? -1 : a.micros > b.micros ? 1 : 0))
        .map((record) => ({ key: recordKey(record), micros: record.micros })),
    }));

  it("names the place it was made from, and is no page cursor", () => {
    fc.assert(
      fc.property(streamPosition, (p) => {
        const cursor = cursors.encodeStream(p);
        expect(cursors.decodeStream(cursor)).toEqual(p);
        expect(cursors.decode(cursor)).toBeUndefined();
      }),
    );
  });

  it("refuses the keys-only event id of unreleased versions, even signed under its secret", () => {
    // `~<horizon>~<newest>~<record keys>`: made by main for an evening (d8cb251 to bb95f4b), under
    // no release, and replaced by ids that give each record its time.
    const keys = [recordKey({ micros: 7n, id: "a" }), recordKey({ micros: 9n, id: "b" })];
    const body = Buffer.from(`~5~9~${keys.join("")}:h`);
    const tag = createHmac("sha256", SECRET).update(body).digest().subarray(0, 16);
    expect(cursors.decodeStream(Buffer.concat([tag, body]).toString("base64url"))).toBeUndefined();
  });

  it("stays about 1 KB naming the most records a lag apart, and refuses one naming more", () => {
    const horizon = { micros: 1_795_238_262_123_456n, id: "x".repeat(40) };
    const spaced = Array.from({ length: MOST_DELIVERED }, (_, i) => {
      const micros = horizon.micros + BigInt(i + 1) * 900_000n;
      return { key: recordKey({ micros, id: `r${i}` }), micros };
    });
    const newest = (spaced.at(-1) as { micros: bigint }).micros;
    expect(cursors.encodeStream({ horizon, newest, delivered: spaced }).length).toBeLessThan(1100);
    const tooMany = [...spaced, { key: recordKey({ micros: newest, id: "more" }), micros: newest }];
    expect(
      cursors.decodeStream(cursors.encodeStream({ horizon, newest, delivered: tooMany })),
    ).toBe(undefined);
  });

  it("takes a record's cursor, an event id of earlier versions, as the place after that record", () => {
    const timestamp = "2026-11-21T05:17:42.123456Z";
    expect(cursors.decodeStream(cursors.after({ timestamp, id: "rec-1" }))).toEqual({
      horizon: { micros: 1_795_238_262_123_456n, id: "rec-1" },
      newest: 1_795_238_262_123_456n,
      delivered: [],
    });
    expect(cursorCodec(`${SECRET}-other`).decodeStream(cursors.after({ timestamp }))).toBe(
      undefined,
    );
  });
});

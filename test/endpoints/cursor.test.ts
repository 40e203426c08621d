// The page cursor round-trips any position and refuses what it did not make.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeCursor, encodeCursor } from "../../src/endpoints/cursor.ts";
import { formatTimestamp } from "../../src/time.ts";

const position = fc.record({
  // BigQuery's TIMESTAMP range in µs.
  timestamp: fc
    .bigInt({ min: -62_135_596_800_000_000n, max: 253_402_300_799_999_999n })
    .map(formatTimestamp),
  id: fc.string({ unit: "binary", maxLength: 40 }),
});

describe("page cursor", () => {
  it("names the position it was made from, whatever the id holds", () => {
    fc.assert(
      fc.property(position, (p) => {
        const cursor = encodeCursor(p);
        expect(cursor).toMatch(/^[\w-]+$/);
        expect(decodeCursor(cursor)).toEqual(p);
      }),
    );
  });

  it("refuses any single-character edit of a cursor it made", () => {
    fc.assert(
      fc.property(position, fc.nat(), fc.constantFrom(..."AQgw_-09z"), (p, at, replacement) => {
        const cursor = encodeCursor(p);
        const i = at % cursor.length;
        const edited = cursor.slice(0, i) + replacement + cursor.slice(i + 1);
        // Base64url's last character may carry unused bits, so an edit there can leave the bytes.
        if (Buffer.from(edited, "base64url").equals(Buffer.from(cursor, "base64url"))) return;
        expect(decodeCursor(edited)).toBeUndefined();
      }),
    );
  });

  it.each(["", "abc", "not a cursor", "%%%", "AAAAAAAAAAAA", "a".repeat(2000)])(
    "refuses %j",
    (text) => {
      expect(decodeCursor(text)).toBeUndefined();
    },
  );
});

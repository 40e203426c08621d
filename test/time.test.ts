import { describe, expect, it } from "vitest";
import {
  formatDatetime,
  formatTimestamp,
  parseIsoTimestamp,
  wireTimestampMicros,
} from "../src/time.ts";

describe("parseIsoTimestamp", () => {
  it.each([
    ["2026-11-21T05:00:00Z", "2026-11-21T05:00:00.000000Z"],
    ["2026-11-21T05:00:00.5Z", "2026-11-21T05:00:00.500000Z"],
    ["2026-11-21T05:00:00.123456789Z", "2026-11-21T05:00:00.123456Z"],
    ["2026-11-21T07:00:00+02:00", "2026-11-21T05:00:00.000000Z"],
    ["2026-11-21T00:30:00-05:30", "2026-11-21T06:00:00.000000Z"],
    ["2024-02-29t23:59:59.999999z", "2024-02-29T23:59:59.999999Z"],
    ["0001-01-01T00:00:00Z", "0001-01-01T00:00:00.000000Z"],
    ["0001-01-01T01:30:00+01:30", "0001-01-01T00:00:00.000000Z"],
    ["9999-12-31T23:59:59.999999Z", "9999-12-31T23:59:59.999999Z"],
    ["9999-12-31T21:59:59.9999999-02:00", "9999-12-31T23:59:59.999999Z"],
  ])("reads %s as %s", (text, expected) => {
    expect(formatTimestamp(parseIsoTimestamp(text) as bigint)).toBe(expected);
  });

  it.each([
    "2026-11-21T05:00:00",
    "2026-11-21",
    "2026-02-29T00:00:00Z",
    "2026-11-21T24:00:00Z",
    "2026-11-21T05:00:60Z",
    "2026-11-21T05:00:00+0200",
    "2026-11-21T05:00:00+24:00",
    "yesterday",
    "' OR 1=1 --",
    "",
  ])("rejects %j", (text) => {
    expect(parseIsoTimestamp(text)).toBeUndefined();
  });

  // BigQuery's TIMESTAMP range is 0001-01-01T00:00:00Z … 9999-12-31T23:59:59.999999Z.
  it.each([
    "9999-12-31T23:00:00-02:00",
    "9999-12-31T22:00:00-02:00",
    "0001-01-01T00:30:00+01:00",
    "0001-01-01T00:00:00+00:01",
    "0000-12-31T23:59:59Z",
    "0000-01-01T00:00:00Z",
  ])("rejects %j, outside BigQuery's range once the offset is applied", (text) => {
    expect(parseIsoTimestamp(text)).toBeUndefined();
  });
});

describe("formatting", () => {
  it("writes timestamps before 1970 with a positive fraction", () => {
    expect(formatTimestamp(-1_500_000n)).toBe("1969-12-31T23:59:58.500000Z");
  });

  it("writes a datetime without zone, with a fraction only when there is one", () => {
    expect(formatDatetime(1_700_000_000_000_000n)).toBe("2023-11-14T22:13:20");
    expect(formatDatetime(1_700_000_000_000_001n)).toBe("2023-11-14T22:13:20.000001");
  });
});

describe("wireTimestampMicros", () => {
  it.each([
    0n,
    -1n,
    -1_500_000n,
    1_795_238_199_690_013n,
    -62_135_596_800_000_000n,
    253_402_300_799_999_999n,
  ])("reads back the instant formatTimestamp wrote of %s µs", (micros) => {
    expect(wireTimestampMicros(formatTimestamp(micros))).toBe(micros);
  });

  it("reads any other text as parseIsoTimestamp does", () => {
    expect(wireTimestampMicros("2026-11-21T07:00:00+02:00")).toBe(
      parseIsoTimestamp("2026-11-21T05:00:00Z"),
    );
    expect(wireTimestampMicros("2026-11-21")).toBeUndefined();
  });
});

// What differs between the rows a test case expects and those an answer holds, in a few lines: the
// rows and fields that differ, not two walls of JSON to compare by eye.
import { isDeepStrictEqual } from "node:util";

/** Lines shown at most; the rest are counted. */
const MAX_LINES = 8;
/** A value longer than this (a log record's metadata) is cut. */
const MAX_VALUE_CHARS = 160;

/** Empty when the rows are the same (fields in any order), else lines naming what differs. */
export function rowsDiff(expected: readonly unknown[], actual: readonly unknown[]): string[] {
  const lines =
    expected.length === actual.length
      ? []
      : [`expected ${expected.length} rows, got ${actual.length}`];
  for (let index = 0; index < Math.max(expected.length, actual.length); index++) {
    lines.push(...rowDiff(`row ${index + 1}`, expected[index], actual[index]));
  }
  return lines.length > MAX_LINES
    ? [...lines.slice(0, MAX_LINES), `… and ${lines.length - MAX_LINES} more lines`]
    : lines;
}

function rowDiff(at: string, expected: unknown, actual: unknown): string[] {
  if (isDeepStrictEqual(expected, actual)) return [];
  if (actual === undefined) return [`${at}: missing; expected ${shown(expected)}`];
  if (expected === undefined) return [`${at}: not expected: ${shown(actual)}`];
  if (!isRecord(expected) || !isRecord(actual)) {
    return [`${at}: expected ${shown(expected)}, got ${shown(actual)}`];
  }
  const fields = [...new Set([...Object.keys(expected), ...Object.keys(actual)])];
  return fields
    .filter((field) => !isDeepStrictEqual(expected[field], actual[field]))
    .map((field) =>
      field in actual
        ? `${at}: ${field}: expected ${field in expected ? shown(expected[field]) : "no such field"}, got ${shown(actual[field])}`
        : `${at}: ${field}: expected ${shown(expected[field])}, but the row has no such field`,
    );
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function shown(value: unknown): string {
  const json = JSON.stringify(value) ?? String(value);
  return json.length > MAX_VALUE_CHARS ? `${json.slice(0, MAX_VALUE_CHARS)}…` : json;
}

// The order a follow delivers records in, (timestamp, id), and reading rows into it. A feed's poll,
// a follower's deliveries and the records it has seen all compare places this one way, which is
// the order both engines sort a window in.
import { setImmediate } from "node:timers/promises";
import type { Row } from "../engines/engine.ts";
import { wireTimestampMicros } from "../time.ts";
import type { Point } from "./stream-position.ts";

/** A record's place: its time and its id. */
export interface Position {
  micros: bigint;
  id: string;
}

/** A record read, and its place in record order. */
export interface Entry {
  row: Row;
  position: Position;
}

// Records a stream is written before other work waiting on the event loop (a request, another
// stream) gets its turn: a burst of 100 000 goes out between them, not in one block.
export const RECORDS_PER_TURN = 200;

export const positionOf = (row: Row): Position => ({
  micros: wireTimestampMicros(String(row.timestamp)) as bigint,
  id: typeof row.id === "string" ? row.id : "",
});

/**
 * Order of (timestamp, id), ids by UTF-8 bytes as both engines compare them; a point without an id
 * comes after every record at its time.
 */
export function compare(a: Point, b: Point): number {
  if (a.micros !== b.micros) return a.micros < b.micros ? -1 : 1;
  if (a.id === b.id) return 0;
  if (a.id === undefined || b.id === undefined) return a.id === undefined ? 1 : -1;
  return Buffer.compare(Buffer.from(a.id), Buffer.from(b.id));
}

export const later = (a: Point, b: Point) => (compare(a, b) >= 0 ? a : b);

/**
 * The rows with their places, oldest first, letting the event loop's other work in every
 * RECORDS_PER_TURN rows. A poll reads newest first and a catch-up oldest first: one run either way,
 * which the sort takes in one pass.
 */
export async function ascending(rows: Row[]): Promise<Entry[]> {
  const entries: Entry[] = [];
  for (const row of rows) {
    entries.push({ row, position: positionOf(row) });
    if (entries.length % RECORDS_PER_TURN === 0) await setImmediate();
  }
  return entries.sort((a, b) => compare(a.position, b.position));
}

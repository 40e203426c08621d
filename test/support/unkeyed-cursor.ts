// A cursor as anyone who knows the format can make one: the check tag of earlier versions (the first
// 6 bytes of the SHA-256 of the body, keyed by nothing), then the timestamp in µs and the id.
import { createHash } from "node:crypto";
import type { RecordPosition } from "../../src/endpoints/cursor.ts";
import { parseIsoTimestamp } from "../../src/time.ts";

export function unkeyedCursor({ timestamp, id }: RecordPosition): string {
  const body = Buffer.from(`${parseIsoTimestamp(timestamp)}:${id}`);
  const tag = createHash("sha256").update(body).digest().subarray(0, 6);
  return Buffer.concat([tag, body]).toString("base64url");
}

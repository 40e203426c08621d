import { createHash } from "node:crypto";

/**
 * A strong ETag (quoted base64url SHA-256) of everything a 304 stands for: the body and the extra headers
 * (two bodies can be equal while one is truncated and the other is not).
 */
export function strongEtag(body: string, headers: Record<string, string>): string {
  const hash = createHash("sha256").update(body);
  for (const name of Object.keys(headers).sort()) {
    // What the query cost is about its computation, not the representation: a refresh that scans a
    // different number of bytes for the same rows still answers 304.
    if (name !== "x-bytes-processed") hash.update(`\n${name}: ${headers[name]}`);
  }
  return `"${hash.digest("base64url")}"`;
}

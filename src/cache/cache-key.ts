import { createHash } from "node:crypto";

// One cache entry per endpoint and parameter set, however the request spelled it: the route (name, UUID,
// Logflare path) and the query-string order do not reach the key.

/**
 * `<endpointId>~<revision>?<params>`: params sorted by name, absent (null) ones dropped,
 * URL-encoded so that no value can forge a separator. Readable in logs. The revision (a digest of
 * the definition and SQL) keeps an answer of one version of an endpoint from being served for
 * another after a reload changed it.
 */
export function cacheKey(
  endpoint: { id: string; revision: string },
  params: Record<string, string | null>,
): string {
  const present = Object.entries(params)
    .filter((entry): entry is [string, string] => entry[1] !== null)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `${versionOf(endpoint)}?${new URLSearchParams(present).toString()}`;
}

const versionOf = (endpoint: Versioned) => `${endpoint.id}~${endpoint.revision}`;

type Versioned = { id: string; revision: string };

/** Whether `key` is of an endpoint `catalog` serves, in the version it serves. */
export function servesKey(
  catalog: { find(id: string): Versioned | undefined },
  key: string,
): boolean {
  const [id = ""] = key.split("~", 1);
  const endpoint = catalog.find(id);
  return endpoint !== undefined && key.startsWith(`${versionOf(endpoint)}?`);
}

/** A short, stable name for an entry in log lines: the first 12 hex digits of its key's SHA-256. */
export function cacheEntryId(key: string): string {
  return createHash("sha256").update(key).digest("hex").slice(0, 12);
}

// The page's calls to the service: the key from sessionStorage in X-API-KEY (never in a URL),
// conditional requests by ETag, and each answer reduced to what the page shows.
const KEY_ITEM = "log-query-explorer.api-key";

export const storedKey = () => sessionStorage.getItem(KEY_ITEM) ?? "";
export const storeKey = (key) => sessionStorage.setItem(KEY_ITEM, key);
export const forgetKey = () => sessionStorage.removeItem(KEY_ITEM);

/**
 * GET `path` (same origin) with the stored key; `etag`, when given, goes as If-None-Match. The
 * browser's HTTP cache is bypassed (no-store): it would otherwise answer a 304 with its own copy as
 * a 200, and the page could not tell that nothing changed. A no-store fetch would also send
 * Cache-Control: no-cache, which asks the service to recompute (and spends the key's budget for
 * that): the page says instead that any value the service holds will do.
 * Resolves to { status, etag, cache, age, requestId, retryAfter, truncated } plus `result` (the
 * rows of a 200) or `error` (the envelope's {code, message, details?}); a 304 has neither.
 */
export async function get(path, etag) {
  const headers = {
    "X-API-KEY": storedKey(),
    Accept: "application/json",
    "Cache-Control": "max-stale",
  };
  if (etag) headers["If-None-Match"] = etag;
  let response;
  try {
    response = await fetch(path, { headers, cache: "no-store" });
  } catch {
    return {
      status: 0,
      error: { code: "network_error", message: "The service could not be reached." },
    };
  }
  const answer = {
    status: response.status,
    etag: response.headers.get("ETag"),
    cache: response.headers.get("X-Cache"),
    age: response.headers.get("Age"),
    requestId: response.headers.get("X-Request-Id"),
    retryAfter: response.headers.get("Retry-After"),
    truncated: response.headers.get("X-Result-Truncated") === "true",
  };
  if (response.status === 304) return answer;
  const body = await response.json().catch(() => null);
  if (response.ok && Array.isArray(body?.result)) return { ...answer, result: body.result };
  const error = body?.error ?? {
    code: "unexpected_answer",
    message: `HTTP ${response.status} without the service's error envelope.`,
  };
  return { ...answer, requestId: answer.requestId ?? error.request_id ?? null, error };
}

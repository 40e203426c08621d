// The page's calls to the service: the key from sessionStorage in X-API-KEY (never in a URL),
// conditional requests by ETag, event streams opened, and each answer reduced to what the page
// shows.
const KEY_ITEM = "log-query-explorer.api-key";

export const storedKey = () => sessionStorage.getItem(KEY_ITEM) ?? "";
export const storeKey = (key) => sessionStorage.setItem(KEY_ITEM, key);
export const forgetKey = () => sessionStorage.removeItem(KEY_ITEM);

const UNREACHABLE = {
  status: 0,
  error: { code: "network_error", message: "The service could not be reached." },
};

/** A refusal stays one until the form or the key changes: only 429, 5xx and no answer are retried. */
export const isRefusal = (answer) =>
  answer.status >= 400 && answer.status < 500 && answer.status !== 429;

/** An answer's error as the page shows it: status, code, message and when to ask again. */
export function describeError(answer) {
  const { code, message } = answer.error;
  const retry = answer.retryAfter ? ` Retry after ${answer.retryAfter} s.` : "";
  return `${answer.status || "No answer"} ${code}: ${message}${retry}`;
}

/** What every answer says in its headers. */
const headersOf = (response) => ({
  status: response.status,
  requestId: response.headers.get("X-Request-Id"),
  retryAfter: response.headers.get("Retry-After"),
});

/** `answer` with the error its `body`'s envelope gives (or says that it gave none). */
function failed(answer, body) {
  const error = body?.error ?? {
    code: "unexpected_answer",
    message: `HTTP ${answer.status} without the service's error envelope.`,
  };
  return { ...answer, requestId: answer.requestId ?? error.request_id ?? null, error };
}

/**
 * GET `path` (same origin) with the stored key; `etag`, when given, goes as If-None-Match. The
 * browser's HTTP cache is bypassed (no-store): it would otherwise answer a 304 with its own copy as
 * a 200, and the page could not tell that nothing changed. A no-store fetch would also send
 * Cache-Control: no-cache, which on the first request (no ETag yet: not a poll) asks the service to
 * recompute and spends the key's budget for that: the page says instead that any value the service
 * holds will do.
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
    return UNREACHABLE;
  }
  const answer = {
    ...headersOf(response),
    etag: response.headers.get("ETag"),
    cache: response.headers.get("X-Cache"),
    age: response.headers.get("Age"),
    truncated: response.headers.get("X-Result-Truncated") === "true",
  };
  if (response.status === 304) return answer;
  const body = await response.json().catch(() => null);
  if (response.ok && Array.isArray(body?.result)) return { ...answer, result: body.result };
  return failed(answer, body);
}

/**
 * The OpenAPI document as the stored key sees it (its endpoints' rows among its schemas); null
 * when it cannot be had, and then the page knows no row and shows tables.
 */
export async function getDocument() {
  try {
    const response = await fetch("/openapi.json", {
      headers: { "X-API-KEY": storedKey(), Accept: "application/json" },
      cache: "no-store",
    });
    return response.ok ? await response.json() : null;
  } catch {
    return null;
  }
}

/**
 * Opens the event stream at `path` (a watch or a follow) with the stored key; `lastEventId`, when
 * given, says where a reconnect resumes. `signal` aborts it, reading included. Resolves to
 * { status, requestId, retryAfter } plus `body` (the stream's bytes, once open) or `error` (the
 * envelope's, when the service answered without opening it).
 */
export async function openStream(path, lastEventId, signal) {
  const headers = { "X-API-KEY": storedKey(), Accept: "text/event-stream" };
  if (lastEventId) headers["Last-Event-ID"] = lastEventId;
  let response;
  try {
    response = await fetch(path, { headers, cache: "no-store", signal });
  } catch {
    return UNREACHABLE;
  }
  const answer = headersOf(response);
  const type = response.headers.get("Content-Type") ?? "";
  if (response.ok && type.startsWith("text/event-stream")) {
    return { ...answer, body: response.body };
  }
  return failed(answer, await response.json().catch(() => null));
}

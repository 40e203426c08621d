// The service as the command-line client sees it: a base URL and a key, GET requests with the key
// in a header, waits on 429 and 503 as Retry-After says, and every failure as a CliError that says
// what went wrong and with which exit code. Only HTTP: nothing of the server is imported.
import { CliError, EXIT } from "./cli-error.ts";
import { text } from "./streams.ts";
import { shown } from "./terminal.ts";

export interface Connection {
  /** The service's origin, e.g. http://127.0.0.1:3000. */
  url: string;
  key: string;
}

/**
 * The shortest and longest wait before another try, whatever Retry-After says: `0` would ask again
 * at once, as often as the service answers, and a wait beyond Node's timers (about 24.8 days) fires
 * after 1 ms.
 */
export const SHORTEST_WAIT_MS = 250;
export const LONGEST_WAIT_MS = 30_000;

/**
 * Waits before another try: Retry-After when the service gave one (seconds, or an HTTP date), else
 * `fallbackMs`; never below SHORTEST_WAIT_MS or above LONGEST_WAIT_MS.
 */
export function retryDelayMs(
  response: Response | undefined,
  fallbackMs: number,
  now = Date.now(),
): number {
  const retryAfter = response?.headers.get("retry-after")?.trim() ?? "";
  let ms = fallbackMs;
  if (/^\d+$/.test(retryAfter)) ms = Number(retryAfter) * 1000;
  // Every form of HTTP date starts with the day's name; Date.parse alone takes "-1" for a year.
  else if (/^[A-Za-z]{3}/.test(retryAfter) && !Number.isNaN(Date.parse(retryAfter)))
    ms = Date.parse(retryAfter) - now;
  return Math.min(Math.max(ms, SHORTEST_WAIT_MS), LONGEST_WAIT_MS);
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Tries a refused or overloaded request again this many times before giving up. */
const RETRIES = 8;

/**
 * GETs `path` (with its query string); on 429 or 503 waits and asks again, then gives up with a
 * CliError, as for any other error status. The response is returned unread.
 */
export async function get(
  connection: Connection,
  path: string,
  headers: Record<string, string> = {},
  signal?: AbortSignal,
): Promise<Response> {
  for (let attempt = 0; ; attempt++) {
    const response = await request(connection, path, headers, signal);
    if (response.ok) return response;
    if ((response.status === 429 || response.status === 503) && attempt < RETRIES) {
      await response.body?.cancel();
      await sleep(retryDelayMs(response, 1000 * 2 ** attempt));
      continue;
    }
    throw await errorOf(response);
  }
}

/** One GET, a network failure as a CliError. */
export async function request(
  connection: Connection,
  path: string,
  headers: Record<string, string>,
  signal?: AbortSignal,
): Promise<Response> {
  const url = new URL(path, connection.url);
  // A path an answer gave (a Link to the next page) goes where the key may go: the service only.
  if (url.origin !== new URL(connection.url).origin) {
    throw new CliError(
      `${connection.url} linked to ${url.origin}, which log-query does not send your key to`,
      EXIT.server,
    );
  }
  let response: Response;
  try {
    response = await fetch(url, {
      headers: { "x-api-key": connection.key, ...headers },
      redirect: "manual",
      signal,
    });
  } catch (error) {
    if (signal?.aborted) throw error;
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    throw new CliError(
      `cannot reach ${connection.url}: ${cause?.code ?? cause?.message ?? (error as Error).message}`,
      EXIT.network,
    );
  }
  // The service never redirects; a proxy in front of it may (http to https, say). Followed, the
  // key would go wherever it points; retried, it would answer the same: the --url is to change.
  if (response.status >= 300 && response.status < 400) {
    await response.body?.cancel();
    const to = response.headers.get("location");
    throw new CliError(
      `${connection.url} redirects${to ? ` to ${shown(to)}` : ""}, which log-query does not follow with your key: give --url the address the service answers at`,
      EXIT.usage,
    );
  }
  return response;
}

interface Envelope {
  error?: { code?: unknown; message?: unknown; details?: unknown };
}

/**
 * The error an answer's status and envelope stand for: `code: message`, a line more per refused
 * parameter (`invalid_params`: its name and why), each shown as text; and its exit code.
 */
export async function errorOf(response: Response): Promise<CliError> {
  const body = await text(response);
  let said = `HTTP ${response.status}`;
  try {
    const { error } = JSON.parse(body) as Envelope;
    if (error?.code) said = `${shown(String(error.code))}: ${shown(String(error.message ?? ""))}`;
    if (Array.isArray(error?.details)) {
      for (const { param, message } of error.details as { param?: unknown; message?: unknown }[])
        said += `\n  ${shown(String(param))}: ${shown(String(message))}`;
    }
  } catch {
    // Not the service's envelope (a proxy's page): the status says enough.
  }
  return new CliError(said, exitCodeOf(response.status));
}

function exitCodeOf(status: number): number {
  if (status === 401 || status === 403) return EXIT.auth;
  if (status === 404) return EXIT.notFound;
  if (status >= 400 && status < 500 && status !== 429) return EXIT.usage;
  return EXIT.server;
}

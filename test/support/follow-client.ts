// A follow stream's client for tests: opens …/follow over real HTTP and collects its Server-Sent
// Events (or NDJSON lines) as they come; every stream and closer is closed after the test.
import { get as httpGet } from "node:http";
import { connect, type Socket } from "node:net";
import { afterEach, expect } from "vitest";
import { micros, PROJECT } from "./fixtures.ts";
import type { Row } from "./googlesql.ts";
import { API_KEY } from "./service.ts";

/** The follow tests' pinned clock, a quick poll, and the query string of the fixtures' project. */
export const NOW = "2026-11-21T05:17:42.123456Z";
/** The follow settings of these tests: a poll every 40 ms. */
export const FOLLOW = { intervalMs: 40, lagMs: 60_000 };
/** Their follow streams' clock, pinned at NOW. */
export const FOLLOW_CLOCK = { clock: () => micros(NOW) };
export const QUERY = `project=${PROJECT}&project_tier=FREE`;

export interface Event {
  id?: string;
  event?: string;
  data: string;
}

/** An open stream: the events (or NDJSON lines) read so far. */
export interface Stream {
  events: Event[];
  lines: string[];
  /** Every Server-Sent Events frame as it came, comment lines included. */
  frames: string[];
  ended: Promise<void>;
  until(check: () => boolean): Promise<void>;
  close(): void;
}

/** Run after the current test, last added first. */
export const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

export async function open(url: string, headers: Record<string, string> = {}): Promise<Stream> {
  const controller = new AbortController();
  const response = await fetch(url, {
    headers: headers.authorization ? headers : { "x-api-key": API_KEY, ...headers },
    signal: controller.signal,
  });
  if (response.status !== 200) throw new Error(`${response.status} ${await response.text()}`);
  const text = (response.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream());
  return collected(text, headers.accept === "application/x-ndjson", () => controller.abort());
}

/**
 * `open` on node:http, whose client keeps no timer of its own: for tests that fake setTimeout and
 * move time by hours, where fetch's body timeout would end the stream.
 */
export function openOverHttp(url: string): Promise<Stream> {
  return new Promise((resolve, reject) => {
    const request = httpGet(url, { headers: { "x-api-key": API_KEY } }, (response) => {
      if (response.statusCode !== 200) {
        reject(new Error(`${response.statusCode}`));
        return response.resume();
      }
      response.setEncoding("utf8");
      resolve(collected(response, false, () => request.destroy()));
    });
    request.on("error", reject);
  });
}

/** Reads a stream's text into a Stream as it comes; `close` stops it. */
function collected(text: AsyncIterable<string>, ndjson: boolean, close: () => void): Stream {
  const stream: Stream = {
    events: [],
    lines: [],
    frames: [],
    ended: Promise.resolve(),
    until: (check) => expect.poll(check, { timeout: 10_000, interval: 20 }).toBe(true),
    close,
  };
  stream.ended = (async () => {
    let buffered = "";
    try {
      for await (const chunk of text) {
        buffered += chunk;
        const separator = ndjson ? "\n" : "\n\n";
        for (let at = buffered.indexOf(separator); at !== -1; at = buffered.indexOf(separator)) {
          const frame = buffered.slice(0, at);
          buffered = buffered.slice(at + separator.length);
          if (ndjson) stream.lines.push(frame);
          else {
            stream.frames.push(frame);
            const fields = Object.fromEntries(
              frame
                .split("\n")
                .filter((line) => !line.startsWith(":"))
                .map((line) => [
                  line.slice(0, line.indexOf(":")),
                  line.slice(line.indexOf(":") + 2),
                ]),
            );
            if (fields.data !== undefined) stream.events.push(fields as unknown as Event);
          }
        }
      }
    } catch {
      // Closed by close().
    }
  })();
  closers.push(() => stream.close());
  return stream;
}

/** Ascending (timestamp, id by bytes): the order of a stream, and of settled runs laid end to end. */
export const inOrder = (rows: Row[]) =>
  [...rows].sort(
    (a, b) =>
      Number(micros(a.timestamp as string) - micros(b.timestamp as string)) ||
      Buffer.compare(Buffer.from(String(a.id)), Buffer.from(String(b.id))),
  );

export const records = (stream: Stream) =>
  stream.events.filter((e) => e.event === undefined).map((e) => JSON.parse(e.data) as Row);

/** A client that sends its request and then reads nothing: what it was sent waits in buffers. */
export function stalledClient(
  base: string,
  path: string,
  key = API_KEY,
  accept = "text/event-stream",
) {
  const { hostname, port } = new URL(base);
  const socket: Socket = connect(Number(port), hostname);
  socket.write(
    `GET ${path} HTTP/1.1\r\nHost: ${hostname}\r\nX-API-KEY: ${key}\r\nAccept: ${accept}\r\n\r\n`,
  );
  socket.pause();
  let received = "";
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  closers.push(() => {
    socket.destroy();
  });
  return {
    /** Reads from now on; resolves with everything the connection carried once it closes. */
    readToEnd: async () => {
      socket.on("data", (chunk) => {
        received += chunk;
      });
      socket.resume();
      await closed;
      return received;
    },
  };
}

// Event streams (a watch, a follow), read and kept open. The page cannot use EventSource, which
// sends no X-API-KEY header, so it reads a fetch() body and parses the Server-Sent Events itself,
// as the HTML standard does, keeping the comment lines too (a watch says how fresh each value is in
// them). A stream that ends or drops is reopened after a pause, from the last event id it gave
// (Last-Event-ID: a watch then sends nothing until the value changes, a follow every record after
// that one); its `retry:` field is not read, the page pausing its own refresh interval.
import { describeError, isRefusal, openStream } from "./api.js";

// CR, LF or CRLF end a line; a CR at the end of what has arrived may be the first half of a CRLF.
const LINE_END = /\r\n|\n|\r(?!$)/;

/**
 * The events of `body` (a ReadableStream of bytes), each { type, id, data, comments }: `type` is
 * "message" unless the event names one, `id` the last id the stream gave, `comments` the comment
 * lines since the previous event, without their colon. `position.id` is that id as each event ends,
 * dispatched or not, as the HTML standard keeps it. Ends with the stream; throws when it drops or is
 * aborted.
 */
async function* events(body, position) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let pending = "";
  let id = "";
  let event = { type: "", data: [], comments: [] };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      const lines = (pending + value).split(LINE_END);
      pending = lines.pop();
      for (const line of lines) {
        if (line === "") {
          // A blank line ends an event; one without data (a heartbeat, a start) is not dispatched.
          if (id !== "") position.id = id;
          if (event.data.length > 0) {
            yield {
              type: event.type || "message",
              id,
              data: event.data.join("\n"),
              comments: event.comments,
            };
          }
          event = { type: "", data: [], comments: [] };
          continue;
        }
        const colon = line.indexOf(":");
        if (colon === 0) {
          event.comments.push(line.slice(1).trimStart());
          continue;
        }
        const field = colon === -1 ? line : line.slice(0, colon);
        const text = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") event.type = text;
        else if (field === "data") event.data.push(text);
        else if (field === "id" && !text.includes("\0")) id = text;
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

/** Resolves after `ms`, or at once when `signal` aborts. */
const pause = (ms, signal) =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });

/** Why an `end` event says the stream ended: its data is {"reason": …}. */
function endReason(data) {
  try {
    return JSON.parse(data).reason ?? data;
  } catch {
    return data;
  }
}

/**
 * Keeps the stream at `path` open, resuming after `lastEventId` (when given). `on.open(answer)`
 * runs each time it opens, `on.event(event)` for each event but the last (`end`), `on.reopening(why)`
 * when it ended or dropped and is reopened after `retrySeconds`, and `on.refused(answer)` when the
 * service answered without opening it (an error envelope, or no answer at all): it is not tried
 * again. Once it has opened, a service away for a while (no answer, 429, 5xx: a restart) is
 * waited out as a drop is, for `retrySeconds` or its Retry-After. Returns the function that stops
 * it, aborting any read under way.
 */
export function keepOpen(path, lastEventId, retrySeconds, on) {
  const aborter = new AbortController();
  const { signal } = aborter;
  const position = { id: lastEventId };
  let opened = false;
  (async () => {
    while (!signal.aborted) {
      const answer = await openStream(path, position.id, signal);
      if (signal.aborted) return;
      if (answer.error) {
        if (!opened || isRefusal(answer)) return on.refused(answer);
        on.reopening(describeError(answer));
        await pause(Math.max(retrySeconds, Number(answer.retryAfter) || 0) * 1000, signal);
        continue;
      }
      opened = true;
      on.open(answer);
      let why = "the service closed the stream";
      try {
        for await (const event of events(answer.body, position)) {
          if (event.type === "end") {
            why = `the stream ended (${endReason(event.data)})`;
            break;
          }
          on.event(event);
        }
      } catch {
        why = "the connection dropped";
      }
      if (signal.aborted) return;
      on.reopening(why);
      await pause(retrySeconds * 1000, signal);
    }
  })();
  return () => aborter.abort();
}

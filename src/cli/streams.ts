// Reading a response as it arrives: NDJSON lines, or Server-Sent Events parsed by
// eventsource-parser.
import { createParser, type EventSourceMessage } from "eventsource-parser";

/** The body's text, chunk by chunk, as it arrives. */
async function* chunks(response: Response): AsyncGenerator<string> {
  if (!response.body) return;
  yield* response.body.pipeThrough(new TextDecoderStream());
}

/** Each complete line of the body; a last line without its newline is not complete. */
export async function* lines(response: Response): AsyncGenerator<string> {
  let pending = "";
  for await (const chunk of chunks(response)) {
    pending += chunk;
    const complete = pending.split("\n");
    pending = complete.pop() ?? "";
    yield* complete.filter((line) => line !== "");
  }
}

/** Each Server-Sent Event of the body, as it completes. */
export async function* events(response: Response): AsyncGenerator<EventSourceMessage> {
  const parsed: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (event) => parsed.push(event) });
  for await (const chunk of chunks(response)) {
    parser.feed(chunk);
    yield* parsed.splice(0);
  }
}

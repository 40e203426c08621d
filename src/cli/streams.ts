// Reading a response as it arrives: NDJSON lines, or Server-Sent Events parsed by
// eventsource-parser. What is held is bounded: a server that sends a line, an event or a whole
// answer longer than any the service sends is not one to trust, and ends the command.
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { CliError, EXIT } from "./cli-error.ts";

/** The body's text, chunk by chunk, as it arrives; a connection that breaks is a network error. */
async function* chunks(response: Response): AsyncGenerator<string> {
  if (!response.body) return;
  try {
    yield* response.body.pipeThrough(new TextDecoderStream());
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code;
    throw new CliError(
      `the connection broke before the answer ended: ${cause ?? (error as Error).message}`,
      EXIT.network,
    );
  }
}

/** The longest line (NDJSON) or event (Server-Sent Events) held, in characters. */
export const MAX_LINE = 16 * 1024 * 1024;
/** The longest answer read whole (a page, the endpoint listing, an error), in characters. */
export const MAX_BODY = 64 * 1024 * 1024;

const tooLong = (what: string, max: number) =>
  new CliError(
    `the service sent ${what} longer than ${max / 1024 / 1024} MiB; log-query stopped reading`,
    EXIT.server,
  );

/** Each complete line of the body; a last line without its newline is not complete. */
export async function* lines(response: Response): AsyncGenerator<string> {
  let pending = "";
  for await (const chunk of chunks(response)) {
    pending += chunk;
    if (chunk.includes("\n")) {
      const complete = pending.split("\n");
      pending = complete.pop() ?? "";
      yield* complete.filter((line) => line !== "");
    }
    if (pending.length > MAX_LINE) throw tooLong("a line", MAX_LINE);
  }
}

const LINE_BREAK = /\r\n|\r|\n/;

/**
 * Measures Server-Sent Events text as it is fed to the parser, which holds the line being received
 * and the event being received (its lines up to a blank one): either growing past MAX_LINE throws.
 */
function eventSizeGuard(): (chunk: string) => void {
  let line = 0;
  let event = 0;
  let afterCarriageReturn = false;
  return (chunk) => {
    // A CR ending one chunk and a LF starting the next are one line break.
    const text = afterCarriageReturn && chunk.startsWith("\n") ? chunk.slice(1) : chunk;
    afterCarriageReturn = text.endsWith("\r");
    text.split(LINE_BREAK).forEach((part, index) => {
      if (index > 0) {
        if (line === 0) event = 0;
        line = 0;
      }
      line += part.length;
      event += part.length;
    });
    if (line > MAX_LINE) throw tooLong("a line", MAX_LINE);
    if (event > MAX_LINE) throw tooLong("an event", MAX_LINE);
  };
}

/** Each Server-Sent Event of the body, as it completes. */
export async function* events(response: Response): AsyncGenerator<EventSourceMessage> {
  const parsed: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (event) => parsed.push(event) });
  const measure = eventSizeGuard();
  for await (const chunk of chunks(response)) {
    measure(chunk);
    parser.feed(chunk);
    yield* parsed.splice(0);
  }
}

/** The whole body as text. */
export async function text(response: Response): Promise<string> {
  let whole = "";
  for await (const chunk of chunks(response)) {
    whole += chunk;
    if (whole.length > MAX_BODY) throw tooLong("an answer", MAX_BODY);
  }
  return whole;
}

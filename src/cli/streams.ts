// Reading a response as it arrives: NDJSON lines, or Server-Sent Events parsed by
// eventsource-parser.
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { CliError, EXIT } from "./client.ts";

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

/**
 * Each Server-Sent Event of the body, as it completes; `onId` hears each event id as it takes
 * effect, an id given alone (where a stream starts) included.
 */
export async function* events(
  response: Response,
  onId?: (id: string) => void,
): AsyncGenerator<EventSourceMessage> {
  const parsed: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (event) => parsed.push(event), onId });
  for await (const chunk of chunks(response)) {
    parser.feed(chunk);
    yield* parsed.splice(0);
  }
}

/** The whole body as text. */
export async function text(response: Response): Promise<string> {
  let whole = "";
  for await (const chunk of chunks(response)) whole += chunk;
  return whole;
}

// `log-query tail`: logs.all's follow stream, printed a record per line as records arrive. After a
// dropped connection, a 503, or an end the service says to come back from, it reconnects by itself
// with Last-Event-ID (after a wait that doubles, or Retry-After), so no record is lost or printed
// twice; an end that says the key is gone stops it.
import { answerOf, endSchema } from "./answers.ts";
import { CliError, EXIT } from "./cli-error.ts";
import {
  type Connection,
  errorOf,
  LONGEST_WAIT_MS,
  request,
  retryDelayMs,
  sleep,
} from "./client.ts";
import { formatOf, logsParams, type Options } from "./options.ts";
import { formatRecord, recordOf, writeStdout } from "./output.ts";
import { events } from "./streams.ts";

const FIRST_WAIT_MS = 500;
/** Ends after which reconnecting cannot help. */
const FINAL = new Set(["token_expired", "revoked"]);

export async function runTail(connection: Connection, values: Options): Promise<number> {
  const params = logsParams(values);
  if (values.since !== undefined) params.set("since", values.since);
  const format = formatOf(values, ["text", "ndjson"], process.stdout.isTTY ? "text" : "ndjson");
  // Where a reconnect resumes: after the last record printed, or where the stream said it opened.
  let lastEventId: string | undefined;
  let wait = FIRST_WAIT_MS;
  for (;;) {
    let response: Response | undefined;
    try {
      response = await request(connection, `/api/endpoints/logs.all/follow?${params}`, {
        accept: "text/event-stream",
        ...(lastEventId !== undefined && { "last-event-id": lastEventId }),
      });
      if (response.ok) {
        for await (const event of events(response)) {
          if (event.event === "end") {
            const { reason } = answerOf(endSchema, event.data, "a stream's end");
            if (FINAL.has(reason)) throw new CliError(`the stream ended: ${reason}`, EXIT.auth);
            break;
          }
          if (event.event !== "start")
            await writeStdout(formatRecord(recordOf(event.data), format));
          lastEventId = event.id;
          wait = FIRST_WAIT_MS;
        }
      } else if (response.status !== 503 && response.status !== 429) {
        throw await errorOf(response);
      }
    } catch (error) {
      // The connection failed or broke: the service may be restarting. Anything else (a refusal, a
      // record that is not JSON) would be the same again.
      if (!(error instanceof CliError) || error.exitCode !== EXIT.network) throw error;
    }
    await sleep(retryDelayMs(response?.ok ? undefined : response, wait));
    wait = Math.min(wait * 2, LONGEST_WAIT_MS);
  }
}

// Where every stream kind opens: its place under the caps (taken before any work starts), its body,
// and its end when its credential stops being valid, its caller leaves or the service closes.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { KeysFile } from "../../credentials/keys-file.ts";
import { presentedSecret } from "../auth.ts";
import { watchCredential } from "./credential-watch.ts";
import { OutboundStream, type StreamEnds, type StreamLimits } from "./outbound-stream.ts";
import type { StreamCaps } from "./stream-caps.ts";

export interface StreamPlaceOptions {
  caps: StreamCaps;
  limits: StreamLimits;
  /** Counted as streams end. */
  ends: StreamEnds;
  /** Where keys-file keys are revoked: a stream a key opened ends with it. */
  keysFile?: KeysFile;
}

/** A stream's place, taken: opened once the request is known to be answered with a stream. */
export interface StreamPlace {
  open(reply: FastifyReply, events: boolean): OutboundStream;
  /** Gives the place back when no stream is opened after all. */
  release(): void;
}

/** What a stream route reserves its place with; the streams it opened end on the service's close. */
export type ReservePlace = (request: FastifyRequest) => Promise<StreamPlace>;

export function streamPlaces(app: FastifyInstance, options: StreamPlaceOptions): ReservePlace {
  const { caps, limits, ends, keysFile } = options;
  const streams = new Set<OutboundStream>();
  app.addHook("preClose", (done) => {
    // A client that is not reading would hold the close up: its connection goes now.
    for (const stream of streams) stream.end("shutting_down", { cut: true });
    done();
  });
  return async (request) => {
    const { credential } = request;
    const release = await caps.take(request.ip, credential.name);
    return {
      release,
      open: (reply, events) => {
        const stream = new OutboundStream(reply, events, limits, ends);
        streams.add(stream);
        const stopWatching = watchCredential(
          credential,
          presentedSecret(request) as string,
          keysFile,
          (reason) => stream.end(reason),
        );
        stream.body.once("close", () => {
          stopWatching();
          streams.delete(stream);
          release();
        });
        // Headers go out now, not with the first event, which may be minutes away.
        reply.raw.once("pipe", () => reply.raw.flushHeaders());
        return stream;
      },
    };
  };
}

/** Answers with the stream's body, with the headers every stream needs. */
export function sendStream(reply: FastifyReply, stream: OutboundStream, contentType: string) {
  reply
    .type(stream.events ? `${contentType}; charset=utf-8` : contentType)
    .header("cache-control", "no-store")
    // nginx and similar proxies buffer responses unless told not to.
    .header("x-accel-buffering", "no")
    // A stream's connection is not reused: kept alive after it, it would hold close() open.
    .header("connection", "close");
  return reply.send(stream.body);
}

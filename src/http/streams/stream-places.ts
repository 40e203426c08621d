// Where every stream kind opens: its place under the caps (taken before any work starts), its body,
// and its end when its credential stops being valid, a reload removes or changes its endpoint, its
// caller leaves or the service closes.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { KeysFile } from "../../credentials/keys-file.ts";
import {
  type Catalog,
  type EndpointDefinition,
  endpointGone,
  LiveCatalog,
} from "../../endpoints/catalog.ts";
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
  /** The endpoints served: a stream of one a reload removes or changes ends at the swap. */
  catalog: Catalog;
}

/** A stream's place, taken: opened once the request is known to be answered with a stream. */
export interface StreamPlace {
  /** The stream of `endpoint`'s records or values, as the entry the request found. */
  open(reply: FastifyReply, events: boolean, endpoint: EndpointDefinition): OutboundStream;
  /** Gives the place back when no stream is opened after all. */
  release(): void;
}

/** What a stream route reserves its place with; the streams it opened end on the service's close. */
export type ReservePlace = (request: FastifyRequest) => Promise<StreamPlace>;

export function streamPlaces(app: FastifyInstance, options: StreamPlaceOptions): ReservePlace {
  const { caps, limits, ends, keysFile, catalog } = options;
  const streams = new Map<OutboundStream, EndpointDefinition>();
  const stopFollowing =
    catalog instanceof LiveCatalog
      ? catalog.onReplace((next) => {
          for (const [stream, endpoint] of streams) {
            const gone = endpointGone(next, endpoint);
            if (gone) stream.end(gone);
          }
        })
      : () => {};
  app.addHook("preClose", (done) => {
    stopFollowing();
    // A client that is not reading would hold the close up: its connection goes now.
    for (const stream of streams.keys()) stream.end("shutting_down", { cut: true });
    done();
  });
  return async (request) => {
    const { credential } = request;
    const release = await caps.take(request.ip, credential.name);
    return {
      release,
      open: (reply, events, endpoint) => {
        const stream = new OutboundStream(reply, events, limits, ends);
        streams.set(stream, endpoint);
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
        // A reload may have swapped the endpoint out while this place was being taken.
        const gone = endpointGone(catalog, endpoint);
        if (gone) stream.end(gone);
        return stream;
      },
    };
  };
}

/** Answers with the stream's body, with the headers every stream needs. */
export function sendStream(reply: FastifyReply, stream: OutboundStream, contentType: string) {
  return withStreamHeaders(reply, stream.events, contentType).send(stream.body);
}

/**
 * A HEAD of a stream route, once the GET would open its stream (credential, parameters and caps
 * checked): the headers the stream would open with, and no stream. Its place goes back at once.
 */
export function sendStreamHead(
  reply: FastifyReply,
  place: StreamPlace,
  events: boolean,
  contentType: string,
) {
  place.release();
  return withStreamHeaders(reply, events, contentType).send();
}

function withStreamHeaders(reply: FastifyReply, events: boolean, contentType: string) {
  return (
    reply
      .type(events ? `${contentType}; charset=utf-8` : contentType)
      .header("cache-control", "no-store")
      // nginx and similar proxies buffer responses unless told not to.
      .header("x-accel-buffering", "no")
      // A stream's connection is not reused: kept alive after it, it would hold close() open.
      .header("connection", "close")
  );
}

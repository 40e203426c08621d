// A body that does not change while the process runs (a page's files, the OpenAPI document), sent
// brotli- or gzip-compressed when the request accepts it, with an ETag per encoding and a 304 for a
// matching If-None-Match. Each encoding is made once, on first demand, in libuv's pool, and kept:
// later requests cost a lookup, never a compression.
import { promisify } from "node:util";
import { brotliCompress, constants, gzip } from "node:zlib";
import type { FastifyReply, FastifyRequest } from "fastify";
import Negotiator from "negotiator";
import { strongEtag } from "../cache/etag.ts";
import { matchesEtag } from "./reply.ts";

type Encoding = "br" | "gzip";

// Brotli's quality 6: within a few per cent of its best on these files, at a tenth of the time.
const compressors: Record<Encoding, (body: Buffer) => Promise<Buffer>> = {
  br: (body) =>
    promisify(brotliCompress)(body, {
      params: {
        [constants.BROTLI_PARAM_QUALITY]: 6,
        [constants.BROTLI_PARAM_SIZE_HINT]: body.length,
      },
    }),
  gzip: (body) => promisify(gzip)(body),
};

// Smallest first.
const ENCODINGS: Encoding[] = ["br", "gzip"];

// Text compresses; PNGs and the like already are.
const COMPRESSIBLE = /^text\/|javascript|json|svg/;

export class FixedBody {
  readonly #body: Buffer;
  readonly #contentType: string;
  readonly #etag: string;
  readonly #encoded = new Map<Encoding, Promise<Buffer>>();

  constructor(body: Buffer | string, contentType: string) {
    this.#body = typeof body === "string" ? Buffer.from(body) : body;
    this.#contentType = contentType;
    this.#etag = strongEtag(this.#body.toString("latin1"), { "content-type": contentType });
  }

  /** The identity encoding's ETag: it changes whenever the body does. */
  get etag(): string {
    return this.#etag;
  }

  /** Sends the body in the best encoding the request accepts, or 304 when its copy is current. */
  async send(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const vary = reply.getHeader("vary");
    reply
      .header("content-type", this.#contentType)
      .header("vary", vary ? `${vary}, Accept-Encoding` : "Accept-Encoding");
    const encoding = this.#encodingFor(request);
    if (encoding === undefined) return this.#sendAs(request, reply, this.#etag, this.#body);
    let encoded = this.#encoded.get(encoding);
    if (encoded === undefined) {
      encoded = compressors[encoding](this.#body);
      this.#encoded.set(encoding, encoded);
    }
    const etag = `${this.#etag.slice(0, -1)}-${encoding}"`;
    return this.#sendAs(request, reply.header("content-encoding", encoding), etag, await encoded);
  }

  #encodingFor(request: FastifyRequest): Encoding | undefined {
    if (!COMPRESSIBLE.test(this.#contentType) || !request.headers["accept-encoding"]) {
      return undefined;
    }
    // Whatever the request accepts at all, it can decode: the smallest of those is sent.
    const accepted = new Negotiator(request).encodings(ENCODINGS);
    return ENCODINGS.find((encoding) => accepted.includes(encoding));
  }

  #sendAs(request: FastifyRequest, reply: FastifyReply, etag: string, body: Buffer) {
    reply.header("etag", etag);
    if (matchesEtag(request.headers["if-none-match"], etag)) {
      // No header describing the body a 304 does not carry (RFC 9110 §15.4.5).
      reply.removeHeader("content-type").removeHeader("content-encoding");
      return reply.code(304).send();
    }
    return reply.send(body);
  }
}

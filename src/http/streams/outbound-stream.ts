// One stream's body as it goes out: Server-Sent Events or NDJSON framing, a heartbeat, a bound on
// what it may hold unsent, and its end with a reason. Every stream kind writes through this.
import { PassThrough } from "node:stream";
import type { FastifyReply } from "fastify";
import { type Row, rowJson } from "../../engines/engine.ts";

/** Why a stream ended, as its last event tells a client (and so whether to reconnect at once). */
export type EndReason =
  | "shutting_down"
  | "token_expired"
  | "revoked"
  | "too_slow"
  | "error"
  | "settled"
  | "endpoint_removed"
  | "endpoint_changed";

/** Streams ended so far, by reason (a client leaving on its own is not counted). */
export type StreamEnds = Map<EndReason, number>;

export interface StreamLimits {
  /** Bytes a stream may hold unsent when more is written; past that its client is too slow. */
  maxUnsentBytes: number;
  /** How long an ended stream's last bytes may take to go out before its connection is cut. */
  endGraceMs: number;
  /**
   * A comment line this often keeps proxies from closing an idle event stream; a client that takes
   * nothing for this long while more waits to be written is too slow.
   */
  heartbeatMs: number;
}

export class OutboundStream {
  readonly body = new PassThrough();
  /** Server-Sent Events; else NDJSON lines. */
  readonly events: boolean;
  private readonly reply: FastifyReply;
  private readonly limits: StreamLimits;
  private readonly heartbeat: NodeJS.Timeout | undefined;
  private readonly ends: StreamEnds;
  /** Bytes written in this turn of the event loop, which the connection has had no chance to take. */
  private writtenThisTurn = 0;
  /** The event id of the last record written, or where the stream started: where a resume picks up. */
  private position: (() => string) | undefined;

  constructor(reply: FastifyReply, events: boolean, limits: StreamLimits, ends: StreamEnds) {
    this.reply = reply;
    this.events = events;
    this.limits = limits;
    this.ends = ends;
    this.heartbeat = events
      ? setInterval(() => this.write(": keep-alive\n\n"), limits.heartbeatMs)
      : undefined;
    this.body.once("close", () => clearInterval(this.heartbeat));
    // The caller left (or the answer ended): nothing more to send, and nothing kept for it.
    reply.raw.once("close", () => this.body.destroy());
  }

  get ended(): boolean {
    return this.body.writableEnded || this.body.destroyed;
  }

  /** Writes one record, with the event id a reconnect resumes from; false when nothing was written. */
  record(record: Row, cursor: () => string): boolean {
    const json = rowJson(record);
    // NDJSON carries no ids: only the last record's is made, if the stream ends with it.
    const written = this.write(this.events ? `id: ${cursor()}\ndata: ${json}\n\n` : `${json}\n`);
    if (written) this.position = cursor;
    return written;
  }

  /** Where the stream starts (an event id): its end names it until a record moves it on. */
  startsAt(cursor: string): void {
    this.position = () => cursor;
  }

  /**
   * Writes one named event (Server-Sent Events only) with its id, after comment lines that a client
   * may read or ignore; false when nothing was written. `data` is one line (JSON).
   */
  event(name: string, id: string, data: string, comments: readonly string[] = []): boolean {
    const notes = comments.map((comment) => `: ${comment}\n`).join("");
    return this.write(`${notes}event: ${name}\nid: ${id}\ndata: ${data}\n\n`);
  }

  /**
   * Resolves once what was written has gone out to the client (or the stream has ended). Either
   * buffer may be the full one: the body's, or the connection's behind it, whose drain the body
   * never reports (its own buffer was empty), so both are listened to. A client that takes nothing
   * for a heartbeat interval while the stream waits to write is too slow: the stream ends, so that
   * one that stopped reading holds the little it was written and no more, and not for ever.
   */
  ready(): Promise<void> {
    if (this.ended || !this.backedUp()) return Promise.resolve();
    const raw = this.reply.raw;
    return new Promise((resolve) => {
      const stalled = setTimeout(() => {
        this.end("too_slow");
        check();
      }, this.limits.heartbeatMs);
      const check = () => {
        if (!this.ended && this.backedUp()) return;
        clearTimeout(stalled);
        this.body.off("drain", check).off("close", check);
        raw.off("drain", check).off("close", check);
        resolve();
      };
      this.body.on("drain", check).on("close", check);
      raw.on("drain", check).on("close", check);
    });
  }

  /**
   * Ends the stream, telling the client why, so that it does not reconnect at once, and where the
   * next stream resumes: `cursor`, else the id of the last record written or of the start. An
   * NDJSON client, which has no event ids, is told in a last line of its own, and resumes with
   * `after=` across a deploy; `bytes_processed` says what the run's queries cost when the engine
   * says (BigQuery). `cut`: a client not reading gets no grace, its connection goes now.
   */
  end(
    reason: EndReason,
    options: { cut?: boolean; cursor?: string; bytesProcessed?: number } = {},
  ): void {
    if (this.ended) return;
    this.ends.set(reason, (this.ends.get(reason) ?? 0) + 1);
    const cursor = options.cursor ?? this.position?.();
    const end = {
      reason,
      ...(cursor !== undefined && { cursor }),
      ...(options.bytesProcessed !== undefined && { bytes_processed: options.bytesProcessed }),
    };
    if (this.events) this.body.write(`event: end\ndata: ${JSON.stringify(end)}\n\n`);
    else if (cursor !== undefined) this.body.write(`${JSON.stringify({ end })}\n`);
    this.body.end();
    const raw = this.reply.raw;
    if (options.cut && this.backedUp()) raw.destroy();
    else if (!raw.writableFinished) {
      // Bytes a client never reads would be held with the connection: they go with it.
      const timer = setTimeout(() => raw.destroy(), this.limits.endGraceMs);
      timer.unref();
      raw.once("close", () => clearTimeout(timer));
    }
  }

  /** Whether the client is behind: more is waiting than the stream's own buffer holds. */
  backedUp(): boolean {
    return this.body.writableNeedDrain || this.reply.raw.writableNeedDrain;
  }

  /**
   * Writes unless the client has left more than the bound unread from earlier turns: a burst of
   * records written at once (one poll's) is not held against it, a backlog it does not read is.
   * A client that stops reading is found out at the next write, a heartbeat at the latest.
   */
  private write(text: string): boolean {
    if (this.ended) return false;
    if (this.unsent() - this.writtenThisTurn > this.limits.maxUnsentBytes) {
      this.end("too_slow");
      return false;
    }
    if (this.writtenThisTurn === 0) {
      setImmediate(() => {
        this.writtenThisTurn = 0;
      });
    }
    this.writtenThisTurn += Buffer.byteLength(text);
    this.body.write(text);
    return true;
  }

  /** Bytes written and not yet taken by the client's connection. */
  private unsent(): number {
    return this.body.writableLength + this.body.readableLength + this.reply.raw.writableLength;
  }
}

// The records a feed or a follower has seen after a horizon: the only ones a later read can return
// again, so the ones it must not deliver twice. Each record costs O(log n) in the records held, so
// that a busy live tail stays cheap however many records its lag holds.
import { MinHeap } from "../min-heap.ts";
import { compare, type Position } from "./record-order.ts";
import { type DeliveredRecord, MOST_DELIVERED, type Point, recordKey } from "./stream-position.ts";

/** A record seen after a horizon: its place, and its key in a stream position once one was made. */
export interface Sighting {
  point: Point;
  key?: string;
}

/** The key of a record a stream position names: hashed when first asked for. */
export function keyOf(sighting: Sighting): string {
  sighting.key ??= recordKey(sighting.point as Required<Point>);
  return sighting.key;
}

const bySighting = (a: Sighting, b: Sighting) => compare(a.point, b.point);

/** What recordKey hashes: equal for the same record, and only for it. */
const identity = (position: Position) => `${position.micros}:${position.id}`;

/**
 * Records seen after a horizon. A record read is known by its time and id, the text its key
 * hashes; the key is made only for the few a stream position names, since hashing every record a
 * catch-up sends (a SHA-256 each) was a tenth of a settled run's time. Seeing a record, forgetting
 * it once a horizon passes it (the oldest go first), and keeping the newest few a stream position
 * names each cost O(log n).
 */
export class Seen {
  /** The time of the newest record seen (at first, where seeing started). */
  newest: bigint;
  /** Records read, by `micros:id`. */
  private readonly read = new Map<string, Sighting>();
  /**
   * Records a resumed position named, by key: only their key and time are known, each taken to be
   * the last at its time.
   */
  private readonly named = new Map<string, Sighting>();
  /** Every sighting held, the oldest first out: what a prune forgets. */
  private readonly byAge = new MinHeap(bySighting);
  /** The MOST_DELIVERED + 1 newest sightings held (all of them, when fewer), the oldest first out. */
  private readonly newestOnes = new MinHeap(bySighting);

  constructor(newest: bigint, before: readonly DeliveredRecord[] = []) {
    this.newest = newest;
    for (const { key, micros } of before) {
      if (this.named.has(key)) continue;
      const sighting = { point: { micros }, key };
      this.named.set(key, sighting);
      this.hold(sighting);
    }
  }

  has(position: Position): boolean {
    return (
      this.read.has(identity(position)) ||
      (this.named.size > 0 && this.named.has(recordKey(position)))
    );
  }

  /** Records a sighting; false when the record was seen before. */
  add(position: Position): boolean {
    if (this.has(position)) return false;
    const sighting = { point: position };
    this.read.set(identity(position), sighting);
    this.hold(sighting);
    if (position.micros > this.newest) this.newest = position.micros;
    return true;
  }

  /** Forgets what is at or before `horizon`, which no read returns again. */
  prune(horizon: Point): void {
    const passed = (sighting: Sighting | undefined): sighting is Sighting =>
      sighting !== undefined && compare(sighting.point, horizon) <= 0;
    for (let oldest = this.byAge.peek(); passed(oldest); oldest = this.byAge.peek()) {
      this.byAge.pop();
      if (oldest.point.id === undefined) this.named.delete(oldest.key as string);
      else this.read.delete(identity(oldest.point as Position));
    }
    // What the heap of every sighting let go of, this one does too: its oldest.
    while (passed(this.newestOnes.peek())) this.newestOnes.pop();
  }

  /**
   * The MOST_DELIVERED + 1 newest records held, or all of them when fewer: the oldest of them first,
   * the rest in no order.
   */
  newestFew(): Sighting[] {
    return this.newestOnes.toArray();
  }

  private hold(sighting: Sighting): void {
    this.byAge.push(sighting);
    this.newestOnes.push(sighting);
    if (this.newestOnes.size > MOST_DELIVERED + 1) this.newestOnes.pop();
  }
}

// Where the cache's entries live: bounded by count and by bytes, the least recently requested or
// refreshed evicted first; an entry's timer goes with it.
import { LRUCache } from "lru-cache";
import type { Entry } from "./entry.ts";

export class EntryStore {
  readonly #entries: LRUCache<string, Entry>;

  constructor(maxEntries: number, maxBytes: number) {
    this.#entries = new LRUCache<string, Entry>({
      max: maxEntries,
      maxSize: maxBytes,
      sizeCalculation: (entry) => entry.bytes,
      dispose: (entry) => clearTimeout(entry.timer),
    });
  }

  /** The key's entry, looked up as a request: it becomes the most recently used. */
  get(key: string): Entry | undefined {
    return this.#entries.get(key);
  }

  /** The key's entry, its place in the eviction order untouched. */
  peek(key: string): Entry | undefined {
    return this.#entries.peek(key);
  }

  /** Whether `entry` is still the one held for `key` (not replaced, evicted or dropped). */
  holds(key: string, entry: Entry): boolean {
    return this.#entries.peek(key) === entry;
  }

  /** Stores the entry, evicting others as the bounds require; false when it alone is past them. */
  set(key: string, entry: Entry): boolean {
    this.#entries.set(key, entry);
    return this.#entries.peek(key) === entry;
  }

  delete(key: string): void {
    this.#entries.delete(key);
  }

  /** The keys held, as a copy: entries may be deleted while it is walked. */
  keys(): string[] {
    return [...this.#entries.keys()];
  }

  values(): IterableIterator<Entry> {
    return this.#entries.values();
  }

  get size(): number {
    return this.#entries.size;
  }

  get bytes(): number {
    return this.#entries.calculatedSize;
  }

  get maxBytes(): number {
    return this.#entries.maxSize;
  }

  clear(): void {
    this.#entries.clear();
  }
}

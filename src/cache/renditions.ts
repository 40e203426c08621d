// Answers in the representation a request asks for: the loaded payload, or a rendition of it (CSV,
// NDJSON) made on first request and kept with its own strong ETag while its entry fits the byte bound.

import {
  byteSize,
  type CacheAnswer,
  type CacheStatus,
  type Entry,
  SECOND,
  type Served,
} from "./entry.ts";
import type { EntryStore } from "./entry-store.ts";
import { strongEtag } from "./etag.ts";
import type { Rendition } from "./payload.ts";

export class Renditions {
  readonly #entries: EntryStore;
  readonly #keep: (key: string, entry: Entry) => void;

  /** `keep` stores an entry again once a kept rendition has grown it. */
  constructor(entries: EntryStore, keep: (key: string, entry: Entry) => void) {
    this.#entries = entries;
    this.#keep = keep;
  }

  answer(
    key: string,
    entry: Entry,
    rendition: Rendition | undefined,
    status: CacheStatus,
    now: number,
  ): CacheAnswer {
    const { payload, etag } = rendition ? this.#rendered(key, entry, rendition) : entry;
    const ageSeconds = Math.max(0, Math.floor((now - entry.computedAt) / SECOND));
    return { payload, etag, status, ageSeconds, computedAt: entry.computedAt };
  }

  /** The entry's value as `rendition`, made on first use and kept while the entry fits the byte bound. */
  #rendered(key: string, entry: Entry, rendition: Rendition): Served {
    let served = entry.renditions.get(rendition.name);
    if (served) return served;
    const payload = rendition.render(entry.payload);
    served = { payload, etag: strongEtag(payload.body, payload.headers) };
    const bytes = entry.bytes + byteSize(rendition.name, payload);
    if (this.#entries.holds(key, entry) && bytes <= this.#entries.maxBytes) {
      entry.renditions.set(rendition.name, served);
      entry.bytes = bytes;
      // lru-cache sizes a value only when a different one is set: take it out (which clears its
      // timer) and store it again, evicting others as the bound requires.
      this.#entries.delete(key);
      this.#keep(key, entry);
    }
    return served;
  }
}

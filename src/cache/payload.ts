// What the cache holds and serves: a value's bytes with its headers, and another representation
// made from them. Its own module, since the cache, its Redis part and the formats all speak of it.

/** What a loader produces: the serialized body and its response headers (Content-Type, X-Result-Truncated). */
export interface Payload {
  body: string;
  headers: Record<string, string>;
}

/** Another representation of a value, made from the loaded payload. */
export interface Rendition {
  /** Tells an entry's renditions apart. */
  name: string;
  render(payload: Payload): Payload;
}

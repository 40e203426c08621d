// What a representation of an endpoint's result is.
import type { Rendition } from "../../cache/payload.ts";

/** What a route can answer in: a media type, and the suffix on a name that asks for it, if any. */
export interface MediaFormat {
  /** As sent; its media type (before the `;`) is what Accept is matched against. */
  contentType: string;
  /** `<name>.<suffix>` on the name path asks for this format whatever Accept says. */
  suffix?: string;
}

export interface Format extends MediaFormat {
  suffix: string;
  /** How it is made from the JSON payload of an endpoint with these columns; absent for JSON. */
  renditionFor?: (columns: readonly string[]) => Rendition;
}

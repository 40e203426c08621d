// What a representation of an endpoint's result is.
import type { Rendition } from "../../cache/payload.ts";

export interface Format {
  /** As sent; its media type (before the `;`) is what Accept is matched against. */
  contentType: string;
  /** `<name>.<suffix>` on the name path asks for this format whatever Accept says. */
  suffix: string;
  /** How it is made from the JSON payload of an endpoint with these columns; absent for JSON. */
  renditionFor?: (columns: readonly string[]) => Rendition;
}

// The default representation, `{"result":[...]}`: what the runner makes and the cache stores
// (cache/serialized-result.ts), and what every other format is rendered from.
import { JSON_CONTENT_TYPE } from "../../cache/serialized-result.ts";
import { FORMAT_SUFFIXES } from "../../endpoints/format-suffixes.ts";
import type { Format } from "./format.ts";

export const json: Format = {
  contentType: JSON_CONTENT_TYPE,
  suffix: FORMAT_SUFFIXES.json,
};

// Where a settings file stops being JSON, as line and column. JSON.parse names a place for some
// mistakes only (not for a trailing comma in an array, a comment or a bare word), and its messages
// quote the text, which can hold a secret: jsonc-parser, held to strict JSON, says where and never what.
import { type ParseError, parse } from "jsonc-parser";

const STRICT = { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false };

/** "line L, column C" of the first place `text` is not JSON; undefined when it is JSON. */
export function jsonErrorPlace(text: string): string | undefined {
  const errors: ParseError[] = [];
  parse(text, errors, STRICT);
  const first = errors[0];
  if (first === undefined) return undefined;
  const lines = text.slice(0, first.offset).split("\n");
  return `line ${lines.length}, column ${(lines.at(-1)?.length ?? 0) + 1}`;
}

// The place a settings file stops being JSON: found exactly where JSON.parse refuses a text, and the
// place JSON.parse names where it names one.
import fc from "fast-check";
import { expect, it } from "vitest";
import { jsonErrorPlace } from "../src/json-syntax.ts";

/** JSON.parse's verdict: undefined for JSON, else its "line L, column C", or "somewhere". */
function parsersPlace(text: string): string | undefined {
  try {
    JSON.parse(text);
    return undefined;
  } catch (error) {
    const [, line, column] = /\(line (\d+) column (\d+)\)/.exec((error as Error).message) ?? [];
    return line === undefined ? "somewhere" : `line ${line}, column ${column}`;
  }
}

it("finds no place in JSON, and one in every text JSON.parse refuses: the same, where it names one", () => {
  const edited = fc
    .tuple(fc.json(), fc.nat(), fc.nat(), fc.string({ maxLength: 3 }))
    .map(([json, from, length, insert]) => {
      const start = from % (json.length + 1);
      return json.slice(0, start) + insert + json.slice(start + (length % 3));
    });
  fc.assert(
    fc.property(fc.oneof(fc.json(), edited), (text) => {
      const expected = parsersPlace(text);
      const place = jsonErrorPlace(text);
      if (expected === "somewhere") expect(place).toMatch(/^line \d+, column \d+$/);
      else expect(place).toBe(expected);
    }),
    { numRuns: 3_000 },
  );
});

// The place a settings file stops being JSON: one for every text JSON.parse refuses, none for JSON,
// and where a person would look for the usual mistakes.
import fc from "fast-check";
import { expect, it } from "vitest";
import { jsonErrorPlace } from "../src/json-syntax.ts";

const isJson = (text: string) => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};

it("finds no place in JSON, and one in every text JSON.parse refuses", () => {
  const edited = fc
    .tuple(fc.json(), fc.nat(), fc.nat(), fc.string({ maxLength: 3 }))
    .map(([json, from, length, insert]) => {
      const start = from % (json.length + 1);
      return json.slice(0, start) + insert + json.slice(start + (length % 3));
    });
  fc.assert(
    fc.property(fc.oneof(fc.json(), edited), (text) => {
      const place = jsonErrorPlace(text);
      if (isJson(text)) expect(place).toBeUndefined();
      else expect(place).toMatch(/^line \d+, column \d+$/);
    }),
    { numRuns: 3_000 },
  );
});

it.each([
  ['{"rules": [1, 2,]}', "line 1, column 17"],
  ['{\n  "rules": []\n  "more": 1\n}', "line 3, column 3"],
  ["{\n  // a comment\n}", "line 2, column 3"],
  ["{'rules': []}", "line 1, column 2"],
  ['{"rules": [yes]}', "line 1, column 12"],
  ["", "line 1, column 1"],
])("names where %j stops being JSON", (text, place) => {
  expect(jsonErrorPlace(text)).toBe(place);
});

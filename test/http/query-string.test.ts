import { describe, expect, it } from "vitest";
import { parseQueryString } from "../../src/http/query-string.ts";

describe("parseQueryString", () => {
  it("gives the same frozen object each time a query string repeats, so what is derived from it is found by identity", () => {
    const first = parseQueryString("project=default&interval=1day");
    expect(first).toEqual({ project: "default", interval: "1day" });
    expect(Object.isFrozen(first)).toBe(true);
    expect(parseQueryString("project=default&interval=1day")).toBe(first);
    expect(parseQueryString("project=staging&interval=1day")).toEqual({
      project: "staging",
      interval: "1day",
    });
  });

  it("keeps at most 1000 query strings: an evicted one is parsed anew, to an equal object", () => {
    const first = parseQueryString("project=evicted");
    for (let i = 0; i < 1_000; i++) parseQueryString(`project=p${i}`);
    const again = parseQueryString("project=evicted");
    expect(again).not.toBe(first);
    expect(again).toEqual(first);
  });

  it("decodes percent-encoding, and marks a badly encoded query string however often it comes", () => {
    expect(parseQueryString("project=%5Ehttps%3A")).toEqual({ project: "^https:" });
    const bad = parseQueryString("project=%ZZ");
    expect(parseQueryString("project=%ZZ")).toBe(bad);
    expect(bad).not.toHaveProperty("project");
  });
});

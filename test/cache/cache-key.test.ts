import { expect, it } from "vitest";
import { cacheKey } from "../../src/cache/cache-key.ts";

const ID = { id: "301c3c3d-c4b3-4d6e-b0a1-e6310fabb99c", revision: "0123456789ab" };

it("does not depend on parameter order", () => {
  expect(cacheKey(ID, { project: "p", interval: "1hr", function_id: "f" })).toBe(
    cacheKey(ID, { function_id: "f", interval: "1hr", project: "p" }),
  );
});

it("treats an absent (null) parameter as not given", () => {
  expect(cacheKey(ID, { project: "p", function_id: null })).toBe(cacheKey(ID, { project: "p" }));
});

it("keeps different parameter sets and endpoints apart", () => {
  const key = cacheKey(ID, { project: "p", interval: "1hr" });
  expect(cacheKey(ID, { project: "p", interval: "1day" })).not.toBe(key);
  expect(
    cacheKey(
      { ...ID, id: "fa6e0509-d5f7-468e-b429-8c4aecf8563d" },
      { project: "p", interval: "1hr" },
    ),
  ).not.toBe(key);
  // Another version of the same endpoint (its SQL changed by a reload) shares nothing either.
  expect(cacheKey({ ...ID, revision: "ba9876543210" }, { project: "p", interval: "1hr" })).not.toBe(
    key,
  );
});

it("cannot be forged by a value holding separators", () => {
  expect(cacheKey(ID, { project: "p&interval=1hr" })).not.toBe(
    cacheKey(ID, { project: "p", interval: "1hr" }),
  );
});

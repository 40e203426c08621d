import { describe, expect, it } from "vitest";

describe("runtime", () => {
  it("is the Node 24 that package.json pins, not the machine's own", () => {
    expect(process.versions.node).toMatch(/^24\./);
  });
});

import { expect, it } from "vitest";
import { strongEtag } from "../../src/cache/etag.ts";

it("is a quoted base64url SHA-256, equal for equal answers", () => {
  const etag = strongEtag('{"result":[]}', {});
  expect(etag).toMatch(/^"[A-Za-z0-9_-]{43}"$/);
  expect(strongEtag('{"result":[]}', {})).toBe(etag);
  expect(strongEtag('{"result":[1]}', {})).not.toBe(etag);
});

it("differs when only the extra headers differ", () => {
  const body = '{"result":[]}';
  expect(strongEtag(body, { "X-Result-Truncated": "true" })).not.toBe(strongEtag(body, {}));
});

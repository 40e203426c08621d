// A message kept where other replicas read it (Redis) is sent only as a replica sealed it.
import { describe, expect, it } from "vitest";
import { type Message, sealMessage, unsealMessage } from "../../src/alerts/webhooks.ts";

const SECRET = `whsec_${Buffer.from("a test secret of 24 bytes!").toString("base64")}`;
const OTHER = `whsec_${Buffer.from("another secret, 24 bytes").toString("base64")}`;
const MESSAGE: Message = { id: "msg_abc_1", type: "alert.firing", data: { rule: "r", rows: [] } };

describe("sealed alert messages", () => {
  it("open under the secret they were sealed with, and under nothing else", () => {
    const sealed = sealMessage(MESSAGE, SECRET);
    expect(unsealMessage(sealed, SECRET)).toEqual(MESSAGE);
    expect(unsealMessage(sealed, OTHER)).toBeUndefined();
    const forged = sealed.replace('"rows":[]', '"rows":[{"forged":true}]');
    expect(unsealMessage(forged, SECRET)).toBeUndefined();
    expect(unsealMessage("no seal at all", SECRET)).toBeUndefined();
    const badId = sealMessage({ ...MESSAGE, id: "msg_\nx" }, SECRET);
    expect(unsealMessage(badId, SECRET)).toBeUndefined();
  });
});

// A stream lives no longer than the credential that opened it: a token ends it at its expiry; a
// keys-file key ends it when it leaves the file, its name or scopes change, or its expires_at
// passes. Keys of API_KEYS are the process's own and last as long as it.
import { sha256Hex } from "../../credentials/authenticate.ts";
import type { Credential } from "../../credentials/credential.ts";
import type { KeyEntry, KeysFile } from "../../credentials/keys-file.ts";
import type { EndReason } from "./outbound-stream.ts";

/** Calls `end` with the reason when the credential presented as `secret` stops being valid; returns the cancel. */
export function watchCredential(
  credential: Credential,
  secret: string,
  keysFile: KeysFile | undefined,
  end: (reason: Extract<EndReason, "token_expired" | "revoked">) => void,
): () => void {
  if (credential.expiresAt !== undefined) {
    return atTime(credential.expiresAt, () => end("token_expired"));
  }
  const digest = sha256Hex(secret);
  const opened = keysFile?.lookup(digest);
  if (!keysFile || !opened) return () => {};
  const grant = grantOf(opened);
  const expiry = (entry: KeyEntry) =>
    entry.expiresAt === undefined ? () => {} : atTime(entry.expiresAt, () => end("revoked"));
  let cancelExpiry = expiry(opened);
  const unsubscribe = keysFile.onChange(() => {
    const current = keysFile.lookup(digest);
    if (!current || grantOf(current) !== grant) return end("revoked");
    cancelExpiry();
    cancelExpiry = expiry(current);
  });
  return () => {
    unsubscribe();
    cancelExpiry();
  };
}

/** What a key may do: a stream opened under one grant does not go on under another. */
const grantOf = ({ credential }: KeyEntry) => JSON.stringify([credential.name, credential.scopes]);

// Node fires a timer of more than 2³¹−1 ms at once: a long wait is taken in steps.
const LONGEST_TIMER_MS = 2 ** 31 - 1;

/** Calls `then` at epoch ms `at`; returns the cancel. */
function atTime(at: number, then: () => void): () => void {
  let timer: NodeJS.Timeout;
  const wait = () => {
    const left = at - Date.now();
    timer = left > LONGEST_TIMER_MS ? setTimeout(wait, LONGEST_TIMER_MS) : setTimeout(then, left);
  };
  wait();
  return () => clearTimeout(timer);
}

// CURSOR_SECRET_FILE: without CURSOR_SECRET, the secret that signs page cursors and event ids is
// generated once and kept in this file, so that a restart leaves every cursor, Last-Event-ID and
// export checkpoint good. The file is the process owner's alone (0600): one that others may read or
// write, or that holds no secret, stops startup with one line naming it.
import { randomBytes } from "node:crypto";
import {
  closeSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  statSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { dirname } from "node:path";

/** As CURSOR_SECRET: shorter is too easily guessed. */
const MIN_LENGTH = 32;

export class CursorSecretFileError extends Error {
  override name = "CursorSecretFileError";
}

/** The secret kept at `path`, generated and written there first when there is none. */
export function keptCursorSecret(path: string): { secret: string; created: boolean } {
  const kept = readSecret(path);
  if (kept !== undefined) return { secret: kept, created: false };
  const made = randomBytes(32).toString("base64url");
  // Another process starting from the same folder may write it first: then its secret is the one.
  return writeOnce(path, made) ? { secret: made, created: true } : keptCursorSecret(path);
}

const problem = (path: string, text: string) =>
  new CursorSecretFileError(`CURSOR_SECRET_FILE: ${path} ${text}`);

const code = (error: unknown) => (error as NodeJS.ErrnoException).code ?? String(error);

function readSecret(path: string): string | undefined {
  let mode: number;
  try {
    const stats = statSync(path);
    if (!stats.isFile()) throw problem(path, "is not a file");
    mode = stats.mode & 0o777;
  } catch (error) {
    if (code(error) === "ENOENT") return undefined;
    if (error instanceof CursorSecretFileError) throw error;
    throw problem(path, `cannot be read (${code(error)})`);
  }
  if ((mode & 0o077) !== 0) {
    throw problem(
      path,
      `is open to other users (mode ${mode.toString(8)}): chmod 600 it, or delete it to have a new secret made (which ends every cursor made so far)`,
    );
  }
  let secret: string;
  try {
    secret = readFileSync(path, "utf8").trim();
  } catch (error) {
    throw problem(path, `cannot be read (${code(error)})`);
  }
  if (secret.length < MIN_LENGTH) {
    throw problem(
      path,
      `holds no secret of at least ${MIN_LENGTH} characters: delete it to have one made`,
    );
  }
  return secret;
}

/** Writes `secret` to `path` unless a file is there; false when one was. */
function writeOnce(path: string, secret: string): boolean {
  // Written whole under a name of this process's own, then linked into place: a process reading
  // the path never sees a half-written file, and a link fails where a file already is.
  // Not named by the process id: in a container every start is process 1.
  const partial = `${path}.${randomBytes(6).toString("hex")}.partial`;
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    const file = openSync(partial, "wx", 0o600);
    try {
      writeSync(file, `${secret}\n`);
      fsyncSync(file);
    } finally {
      closeSync(file);
    }
  } catch (error) {
    throw problem(
      path,
      `cannot be created (${code(error)}): point CURSOR_SECRET_FILE at a path this process may write, or set CURSOR_SECRET`,
    );
  }
  try {
    linkSync(partial, path);
    return true;
  } catch (error) {
    if (code(error) === "EEXIST") return false;
    throw problem(path, `cannot be created (${code(error)})`);
  } finally {
    unlinkSync(partial);
  }
}

// CURSOR_SECRET_FILE: without CURSOR_SECRET, the secret that signs page cursors and event ids is
// generated once and kept in this file, so that a restart leaves every cursor, Last-Event-ID and
// export checkpoint good. The file is the process owner's alone: a symbolic link, a file another
// user owns, one that others may read or write, or one that holds no secret stops startup with one
// line naming it. (In a shared folder, another user's file or link would otherwise choose the
// secret.)
import { randomBytes } from "node:crypto";
import {
  closeSync,
  constants,
  fstatSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { dirname } from "node:path";

/** As CURSOR_SECRET: shorter is too easily guessed. */
const MIN_LENGTH = 32;
/** Rounds of "none there to read, but one there when writing" before giving up. */
const ATTEMPTS = 3;

export class CursorSecretFileError extends Error {
  override name = "CursorSecretFileError";
}

/** The secret kept at `path`, generated and written there first when there is none. */
export function keptCursorSecret(path: string): { secret: string; created: boolean } {
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const kept = readSecret(path);
    if (kept !== undefined) return { secret: kept, created: false };
    const made = randomBytes(32).toString("base64url");
    // Another process starting from the same folder may write it first: then its secret is the one.
    if (writeOnce(path, made)) return { secret: made, created: true };
  }
  throw problem(
    path,
    "is created and removed again by something else: keep the file to this service, or set CURSOR_SECRET",
  );
}

const problem = (path: string, text: string) =>
  new CursorSecretFileError(`CURSOR_SECRET_FILE: ${path} ${text}`);

const code = (error: unknown) => (error as NodeJS.ErrnoException).code ?? String(error);

/** The secret in the file at `path`; undefined when there is none. */
function readSecret(path: string): string | undefined {
  let file: number;
  try {
    // The link itself is refused (ELOOP), never followed; not blocking, in case it is a FIFO.
    file = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    if (code(error) === "ENOENT") return undefined;
    if (code(error) === "ELOOP") {
      throw problem(
        path,
        "is a symbolic link: point CURSOR_SECRET_FILE at a file of its own (for a Kubernetes Secret, whose files are links, give it as CURSOR_SECRET instead)",
      );
    }
    throw problem(path, `cannot be read (${code(error)})`);
  }
  try {
    // Checked on the descriptor read from, so the file cannot be swapped between check and read.
    checkPrivate(path, file);
    const secret = readFileSync(file, "utf8").trim();
    if (secret.length < MIN_LENGTH) {
      throw problem(
        path,
        `holds no secret of at least ${MIN_LENGTH} characters: delete it to have one made`,
      );
    }
    return secret;
  } catch (error) {
    if (error instanceof CursorSecretFileError) throw error;
    throw problem(path, `cannot be read (${code(error)})`);
  } finally {
    closeSync(file);
  }
}

/** Throws unless `file` is a regular file of this process's user that no one else may open. */
function checkPrivate(path: string, file: number): void {
  const stats = fstatSync(file);
  if (!stats.isFile()) throw problem(path, "is not a file");
  const uid = process.getuid?.();
  if (uid !== undefined && stats.uid !== uid) {
    throw problem(
      path,
      `belongs to uid ${stats.uid}, not to this process's user (uid ${uid}): chown it, or delete it to have a new secret made (which ends every cursor made so far)`,
    );
  }
  const mode = stats.mode & 0o777;
  if ((mode & 0o077) !== 0) {
    throw problem(
      path,
      `is open to other users (mode ${mode.toString(8)}): chmod 600 it, or delete it to have a new secret made (which ends every cursor made so far)`,
    );
  }
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

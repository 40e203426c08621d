// A file written into a folder of its own under the system's temp folder, removed after the test file.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";

const folders: string[] = [];
afterAll(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

/** `content` as JSON, or as is when it is a string; returns the file's path. */
export function temporaryFile(name: string, content: unknown): string {
  const folder = mkdtempSync(join(tmpdir(), "test-"));
  folders.push(folder);
  const path = join(folder, name);
  writeFileSync(path, typeof content === "string" ? content : JSON.stringify(content));
  return path;
}

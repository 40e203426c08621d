import { cpSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { exportsIdentity } from "../../src/cache/data-identity.ts";

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

function exportsFolder(files: Record<string, string>): string {
  const folder = mkdtempSync(join(tmpdir(), "exports-"));
  folders.push(folder);
  for (const [name, text] of Object.entries(files)) {
    writeFileSync(join(folder, name), text);
    utimesSync(join(folder, name), 1_700_000_000, 1_700_000_000);
  }
  return folder;
}

it("names the same exports alike, and exports resized, added or touched differently", () => {
  const files = { "edge_logs.ndjson": '{"id":"a"}\n', "function_edge_logs.ndjson": "" };
  const one = exportsFolder(files);
  const copy = mkdtempSync(join(tmpdir(), "exports-"));
  folders.push(copy);
  cpSync(one, copy, { recursive: true, preserveTimestamps: true });
  expect(exportsIdentity(copy)).toBe(exportsIdentity(one));
  // Files that are not exports do not count.
  writeFileSync(join(copy, "README.txt"), "notes");
  expect(exportsIdentity(copy)).toBe(exportsIdentity(one));

  const changed = exportsFolder({ ...files, "edge_logs.ndjson": '{"id":"bb"}\n' });
  expect(exportsIdentity(changed)).not.toBe(exportsIdentity(one));
  const added = exportsFolder({ ...files, "edge_logs-2.ndjson": "" });
  expect(exportsIdentity(added)).not.toBe(exportsIdentity(one));
  const touched = exportsFolder(files);
  utimesSync(join(touched, "edge_logs.ndjson"), 1_700_000_100, 1_700_000_100);
  expect(exportsIdentity(touched)).not.toBe(exportsIdentity(one));
});

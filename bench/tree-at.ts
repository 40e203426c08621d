// Another commit's tree beside this one, for a bench that compares before with after in one run:
// extracted from git into a temporary folder (removed at exit) that shares this tree's node_modules.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** This checkout's root. */
export const root = fileURLToPath(new URL("..", import.meta.url));

/** The folder holding `commit`'s tree; `name` prefixes the temporary folder's name. */
export function treeAt(commit: string, name: string): string {
  const tree = mkdtempSync(join(tmpdir(), `${name}-`));
  execFileSync("sh", ["-c", 'git -C "$1" archive "$2" | tar -x -C "$3"', "sh", root, commit, tree]);
  symlinkSync(join(root, "node_modules"), join(tree, "node_modules"));
  process.on("exit", () => rmSync(tree, { recursive: true, force: true }));
  return tree;
}

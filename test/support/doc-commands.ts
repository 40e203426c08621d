// The shell commands of the docs (README.md, CONTRIBUTING.md, docs/*.md), for the tests that run
// them as written: each `sh` code block split into commands, or taken whole when it is a script
// (a loop or a condition). curl lines run with the real curl, whose config file points
// 127.0.0.1:3000 at the service under test, so that not a character of them changes.
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const ROOT = new URL("../../", import.meta.url);

/** The documents, relative to the repository's root. */
export function docFiles(): string[] {
  const pages = readdirSync(new URL("docs/", ROOT))
    .filter((name) => name.endsWith(".md"))
    .sort()
    .map((name) => `docs/${name}`);
  return ["README.md", "CONTRIBUTING.md", ...pages];
}

export function readDoc(file: string): string {
  return readFileSync(new URL(file, ROOT), "utf8");
}

export interface CodeBlock {
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  /** The block's lines, without the fence's indentation. */
  text: string;
}

/** The fenced code blocks of a document, those inside list items included. */
export function codeBlocks(file: string): CodeBlock[] {
  const blocks: CodeBlock[] = [];
  let open: { line: number; lang: string; indent: number; lines: string[] } | undefined;
  readDoc(file)
    .split("\n")
    .forEach((text, index) => {
      const fence = /^( *)```(\S*)\s*$/.exec(text);
      if (open && fence) {
        blocks.push({ file, line: open.line, lang: open.lang, text: open.lines.join("\n") });
        open = undefined;
      } else if (open) {
        open.lines.push(text.slice(open.indent));
      } else if (fence) {
        open = { line: index + 1, lang: fence[2] ?? "", indent: fence[1]?.length ?? 0, lines: [] };
      }
    });
  return blocks;
}

const shellBlocks = () =>
  docFiles().flatMap((file) => codeBlocks(file).filter((block) => block.lang === "sh"));

const isScript = (block: CodeBlock) => /^\s*(while|until|for|if|case)\b/m.test(block.text);

/** `sh` blocks that are scripts, run whole. */
export function shellScripts(): CodeBlock[] {
  return shellBlocks().filter(isScript);
}

export interface ShellCommand {
  file: string;
  line: number;
  /** One command, its `\` continuations joined. */
  text: string;
}

/** The commands of every `sh` block that is not a script; blank and comment lines left out. */
export function shellCommands(): ShellCommand[] {
  return shellBlocks()
    .filter((block) => !isScript(block))
    .flatMap((block) => {
      const commands: ShellCommand[] = [];
      let pending: ShellCommand | undefined;
      block.text.split("\n").forEach((text, index) => {
        const line = block.line + 1 + index;
        if (!pending && (text.trim() === "" || text.trim().startsWith("#"))) return;
        const joined = pending ? `${pending.text}\n${text}` : text;
        pending = { file: block.file, line: pending?.line ?? line, text: joined };
        if (!text.endsWith("\\")) {
          commands.push(pending);
          pending = undefined;
        }
      });
      return commands;
    });
}

/** The credentials a curl line of the docs may name; the tests that run them supply each. */
export const CURL_VARIABLES = ["KEY", "ACME_KEY", "TOKEN", "API_KEYS"] as const;
export type CurlVariables = Record<(typeof CURL_VARIABLES)[number], string>;

export const SERVICE_ADDRESS = "127.0.0.1:3000";

/** Why the curl runner cannot run `command` as written; undefined when it can. */
export function whyCurlCannotRun(command: string): string | undefined {
  if (!command.startsWith("curl ")) return "it does not start with curl";
  // The URLs curl is given (an argument of its own), not those inside parameter values.
  const urls = [...command.matchAll(/(?:^|\s)["']?(https?:\/\/[^\s"']*)/g)].map(
    ([, url = ""]) => url,
  );
  const elsewhere = urls.find((url) => !url.startsWith(`http://${SERVICE_ADDRESS}/`));
  if (urls.length === 0 || elsewhere) {
    return `it must call the service at http://${SERVICE_ADDRESS}/ (found ${elsewhere ?? "no URL"})`;
  }
  const unknown = [...command.matchAll(/\$\{?(\w+)/g)]
    .map(([, name]) => name as string)
    .find((name) => !(CURL_VARIABLES as readonly string[]).includes(name));
  if (unknown) return `it names $${unknown}; the runner supplies only ${CURL_VARIABLES.join(", ")}`;
  if (/<[^>\s]+>/.test(command.replace(/'[^']*'/g, ""))) return "it holds a <placeholder>";
  return undefined;
}

/** A curl line that streams (-N): it runs until it is stopped. */
export const streams = (command: string) => /\s-[a-zA-Z]*N[a-zA-Z]*\s/.test(command);

/**
 * A folder for CURL_HOME whose .curlrc sends 127.0.0.1:3000 to `baseUrl`'s address and, when
 * `statusOnStderr`, writes each answer's status to stderr (stdout, which the docs pipe, unchanged).
 */
export function curlHome(baseUrl: string, { statusOnStderr = false } = {}): string {
  const folder = mkdtempSync(join(tmpdir(), "curl-home-"));
  const lines = [`connect-to = "${SERVICE_ADDRESS}:${new URL(baseUrl).host}"`];
  if (statusOnStderr) lines.push(String.raw`write-out = "%{stderr}HTTP status %{http_code}\n"`);
  writeFileSync(join(folder, ".curlrc"), `${lines.join("\n")}\n`);
  return folder;
}

export const statusesOf = (stderr: string) =>
  [...stderr.matchAll(/^HTTP status (\d{3})$/gm)].map(([, status]) => Number(status));

export interface ShellRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `script` with `sh` in `cwd`, in this process's environment plus `env`. The run is stopped (its
 * whole process group) as soon as its stdout satisfies `until`, or after `timeoutMs`.
 */
export function runShell(
  script: string,
  env: Record<string, string>,
  {
    cwd = ROOT.pathname,
    until,
    timeoutMs = 120_000,
  }: { cwd?: string; until?: (stdout: string) => boolean; timeoutMs?: number } = {},
): Promise<ShellRun> {
  const child = spawn("sh", ["-c", script], {
    cwd,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let stdout = "";
  let stderr = "";
  const stop = () => {
    try {
      process.kill(-(child.pid as number), "SIGTERM");
    } catch {
      // Already gone.
    }
  };
  child.stdout.on("data", (chunk) => {
    stdout += chunk;
    if (until?.(stdout)) stop();
  });
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  const timer = setTimeout(stop, timeoutMs);
  return new Promise((resolve) => {
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

// Text the service does not control shown as it was stored: log records, and an operator's
// endpoint definitions (names, descriptions, allowed values). Its bidi controls (embeddings,
// overrides, isolates and marks) would reorder what follows them: a record holding U+202E before
// "gnp.exe" would read "exe.png". Each is shown instead, where it stood, as a marker naming it, and
// orders nothing.
import { h } from "./dom.js";

const BIDI_CONTROLS = new Map([
  ["\u061c", "ARABIC LETTER MARK"],
  ["\u200e", "LEFT-TO-RIGHT MARK"],
  ["\u200f", "RIGHT-TO-LEFT MARK"],
  ["\u202a", "LEFT-TO-RIGHT EMBEDDING"],
  ["\u202b", "RIGHT-TO-LEFT EMBEDDING"],
  ["\u202c", "POP DIRECTIONAL FORMATTING"],
  ["\u202d", "LEFT-TO-RIGHT OVERRIDE"],
  ["\u202e", "RIGHT-TO-LEFT OVERRIDE"],
  ["\u2066", "LEFT-TO-RIGHT ISOLATE"],
  ["\u2067", "RIGHT-TO-LEFT ISOLATE"],
  ["\u2068", "FIRST STRONG ISOLATE"],
  ["\u2069", "POP DIRECTIONAL ISOLATE"],
]);
const BIDI_CONTROL = new RegExp(`[${[...BIDI_CONTROLS.keys()].join("")}]`, "g");

const codeOf = (control) => `U+${control.codePointAt(0).toString(16).toUpperCase()}`;

/** A bidi control's marker: ⟨U+202E⟩, its name on hover. */
function marker(control) {
  const code = codeOf(control);
  return h(
    "span",
    { class: "bidi-control", title: `${code} ${BIDI_CONTROLS.get(control)}` },
    `⟨${code}⟩`,
  );
}

/** `text` with each bidi control as its marker's text, where only text goes (a tooltip, an option). */
export function visibleString(text) {
  return text.replace(BIDI_CONTROL, (control) => `⟨${codeOf(control)}⟩`);
}

/** `text` as the nodes that show it: text, and a marker in place of each bidi control. */
export function visibleText(text) {
  const nodes = [];
  let from = 0;
  for (const { 0: control, index } of text.matchAll(BIDI_CONTROL)) {
    nodes.push(text.slice(from, index), marker(control));
    from = index + control.length;
  }
  nodes.push(text.slice(from));
  return nodes;
}

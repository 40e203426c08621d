// What the client prints for a person reads as text, whatever the server sent: a character a
// terminal would act on instead of showing (C0 controls, DEL, C1 controls) or one that reorders the
// text around it (bidirectional overrides, isolates and marks) is written as a visible escape, `\x1b`
// or `\u202e`, so that log text cannot clear the screen, set the window title, hide a link, ask
// the terminal to answer, overwrite a line, or pass for a line of its own.

// Controls (Cc: C0, DEL, C1) but tab, which only moves to the next column; the bidirectional marks,
// embeddings, overrides and isolates.
const CONTROL = /(?!\t)[\p{Cc}\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/gu;

/** `text` with each control character as its escape: one line, shown as sent. */
export function shown(text: string): string {
  return text.replace(CONTROL, (character) => {
    const code = character.charCodeAt(0);
    return code <= 0xff
      ? `\\x${code.toString(16).padStart(2, "0")}`
      : `\\u${code.toString(16).padStart(4, "0")}`;
  });
}

/** Each line of `text` shown, the line breaks kept: for a message whose own lines are meant. */
export function shownLines(text: string): string {
  return text.split("\n").map(shown).join("\n");
}

/**
 * CSV for a terminal: each cell shown, a line break inside a quoted cell too, so that a row can
 * break only where the CSV has one (CRLF or LF, written as a line break). A `"` opens or closes a
 * quoted cell, `""` inside one being a close and an open with nothing between.
 */
export function shownCsv(csv: string): string {
  return csv
    .split('"')
    .map((part, index) =>
      index % 2 === 1 ? shown(part) : part.split(/\r?\n/).map(shown).join("\n"),
    )
    .join('"');
}

// Where a settings file stops being JSON, as line and column. JSON.parse says where for some
// mistakes only: not for a trailing comma in an array, a quote of the wrong kind, a comment or a bare
// word. This follows the grammar (RFC 8259) to the place JSON.parse stops at, and says where, never
// what: JSON.parse's messages quote the text, which can hold a secret.

const WHITESPACE = /[ \t\n\r]*/y;
// RFC 8259's `unescaped`: any character but a control character, a quotation mark or a backslash.
const UNESCAPED = /[\u0020\u0021\u0023-\u005b\u005d-\uffff]*/y;
const ESCAPED = /["\\/bfnrt]|u[0-9a-fA-F]{4}/y;
const DIGITS = /[0-9]+/y;
const LITERALS: Record<string, string> = { t: "true", f: "false", n: "null" };

/** Thrown at the first character that cannot continue the JSON text. */
class Stop {
  readonly at: number;
  constructor(at: number) {
    this.at = at;
  }
}

/** "line L, column C" of the first place `text` is not JSON; undefined when it is JSON. */
export function jsonErrorPlace(text: string): string | undefined {
  let at = 0;
  const skip = (pattern: RegExp): boolean => {
    pattern.lastIndex = at;
    if (!pattern.test(text)) return false;
    at = pattern.lastIndex;
    return true;
  };
  const expect = (char: string) => {
    skip(WHITESPACE);
    if (text[at] !== char) throw new Stop(at);
    at++;
  };
  /** After an opening bracket: `item`s separated by commas up to `close`. */
  const items = (close: string, item: () => void) => {
    skip(WHITESPACE);
    if (text[at] === close) {
      at++;
      return;
    }
    for (;;) {
      item();
      skip(WHITESPACE);
      if (text[at] === close) {
        at++;
        return;
      }
      expect(",");
    }
  };
  const string = () => {
    expect('"');
    for (;;) {
      skip(UNESCAPED);
      if (text[at] === '"') break;
      // A control character, or the end of the text.
      if (text[at] !== "\\") throw new Stop(at);
      at++;
      if (!skip(ESCAPED)) throw new Stop(at);
    }
    at++;
  };
  const digits = () => {
    if (!skip(DIGITS)) throw new Stop(at);
  };
  const number = () => {
    if (text[at] === "-") at++;
    if (text[at] === "0") at++;
    else digits();
    if (text[at] === ".") {
      at++;
      digits();
    }
    if (text[at] === "e" || text[at] === "E") {
      at++;
      if (text[at] === "+" || text[at] === "-") at++;
      digits();
    }
  };
  const value = (): void => {
    skip(WHITESPACE);
    const first = text[at] ?? "";
    if (first === "[") {
      at++;
      items("]", value);
    } else if (first === "{") {
      at++;
      items("}", () => {
        string();
        expect(":");
        value();
      });
    } else if (first === '"') {
      string();
    } else if (first === "-" || (first >= "0" && first <= "9")) {
      number();
    } else {
      const literal = LITERALS[first];
      if (literal === undefined) throw new Stop(at);
      // Character by character: the place is the first that differs, as JSON.parse finds it.
      for (const char of literal) {
        if (text[at] !== char) throw new Stop(at);
        at++;
      }
    }
  };
  try {
    value();
    skip(WHITESPACE);
    if (at < text.length) throw new Stop(at);
    return undefined;
  } catch (error) {
    // Nesting deeper than the stack: no place to name.
    if (!(error instanceof Stop)) return undefined;
    const before = text.slice(0, error.at).split("\n");
    return `line ${before.length}, column ${(before.at(-1)?.length ?? 0) + 1}`;
  }
}

import { UnparsableCommandError } from "../../errors/unparsable-command-error.js";

/**
 * The quote-aware pre-pass of command safety, run before `shell-quote` tokenizes.
 *
 * Why hand-written: `shell-quote` (the maintained tokenizer this classifier relies on for quoting,
 * escapes, variables and operators) reads one line of words and operators. It does not nest: `$(…)`
 * and backticks come out as plain word text, `#` starts a comment even in the middle of a word and
 * then swallows every later line, a newline is just a blank, and heredoc bodies are read as
 * commands. Command substitutions must be classified as commands of their own (docs/policy.md#command-safety), so
 * this scanner finds them itself, respecting quotes, and hands `shell-quote` a single line in which
 * each substitution is a placeholder word.
 */

/** A command, process or backtick substitution found in the text; its body is shell text of its own. */
export interface Substitution {
  kind: "command" | "backtick" | "process-in" | "process-out";
  body: string;
}

/** A heredoc body, with whether its delimiter was quoted (a quoted heredoc expands nothing). */
export interface Heredoc {
  body: string;
  quoted: boolean;
}

/** The result of a scan: one line for `shell-quote`, and what was taken out of it. */
export interface ScannedScript {
  /** The text with substitutions and heredoc delimiters replaced by placeholders, comments removed, newlines made `;`. */
  text: string;
  /** The text with every quoted part blanked out: what a shell would read as syntax. */
  syntax: string;
  substitutions: Substitution[];
  heredocs: Heredoc[];
}

/**
 * Placeholder words use NUL, which normalization has removed from the text, so a placeholder can
 * never be confused with anything the command itself says. `S` marks a substitution, `H` a heredoc;
 * the number is its index in the scan result.
 *
 * @example
 * "\u0000S0\u0000".replace(PLACEHOLDER, (_, kind, index) => `${kind}${index}`) // "S0"
 */
export const PLACEHOLDER = /\u0000([SH])(\d+)\u0000/g;
/** The character every placeholder contains: a word holding it is only known at run time. */
export const PLACEHOLDER_MARK = "\u0000";

function placeholder(kind: "S" | "H", index: number): string {
  return `${PLACEHOLDER_MARK}${kind}${index}${PLACEHOLDER_MARK}`;
}

const OPERATOR_CHARACTERS = new Set([";", "&", "|", "(", ")", "<", ">"]);

function isBlank(character: string | undefined): boolean {
  return character === " " || character === "\t" || character === "\n";
}

/** The index just past a backtick substitution's closing backtick; `start` is just past the opening one. */
function skipBacktick(text: string, start: number): number {
  for (let index = start; index < text.length; index += 1) {
    const character = text[index];
    if (character === "\\") index += 1;
    else if (character === "`") return index + 1;
  }
  return -1;
}

/**
 * Substitutions nested deeper than this are not followed (the text is then treated as unclosed,
 * so it needs approval); it keeps adversarial nesting from exhausting the stack.
 */
const MAX_NESTING = 64;

/** The index just past a double-quoted string's closing quote; `start` is just past the opening one. */
function skipDoubleQuoted(text: string, start: number, nesting: number): number {
  let index = start;
  while (index < text.length) {
    const character = text[index];
    if (character === "\\") index += 2;
    else if (character === '"') return index + 1;
    else if (character === "$" && text[index + 1] === "(") {
      const close = findClosingParenthesis(text, index + 2, nesting + 1);
      if (close < 0) return -1;
      index = close + 1;
    } else if (character === "`") {
      index = skipBacktick(text, index + 1);
      if (index < 0) return -1;
    } else index += 1;
  }
  return -1;
}

/**
 * The index of the `)` that closes a `(` whose body starts at `start`, respecting quotes and
 * nesting, or -1 when it is never closed.
 *
 * @example
 * findClosingParenthesis("$(echo ')' (x))", 2) // 14
 */
export function findClosingParenthesis(text: string, start: number, nesting = 0): number {
  if (nesting > MAX_NESTING) return -1;
  let depth = 1;
  let index = start;
  let wordStart = true;
  while (index < text.length) {
    const character = text[index] as string;
    if (character === "\\") {
      index += 2;
      wordStart = false;
      continue;
    }
    if (character === "'") {
      const end = text.indexOf("'", index + 1);
      if (end < 0) return -1;
      index = end + 1;
      wordStart = false;
      continue;
    }
    if (character === '"') {
      index = skipDoubleQuoted(text, index + 1, nesting);
      if (index < 0) return -1;
      wordStart = false;
      continue;
    }
    if (character === "`") {
      index = skipBacktick(text, index + 1);
      if (index < 0) return -1;
      wordStart = false;
      continue;
    }
    if (character === "#" && wordStart) {
      const end = text.indexOf("\n", index);
      index = end < 0 ? text.length : end;
      continue;
    }
    if (character === "(") depth += 1;
    else if (character === ")") {
      depth -= 1;
      if (depth === 0) return index;
    }
    wordStart = isBlank(character) || OPERATOR_CHARACTERS.has(character);
    index += 1;
  }
  return -1;
}

/**
 * Substitutions inside text that is not shell syntax but is still expanded: an unquoted heredoc
 * body, an arithmetic expansion. Quotes mean nothing there, so only `$(` and backticks count.
 */
function collectLooseSubstitutions(text: string, into: Substitution[], nesting = 0): void {
  if (nesting > MAX_NESTING) throw new UnparsableCommandError("substitutions nested too deeply");
  let index = 0;
  while (index < text.length) {
    const character = text[index];
    if (character === "\\") {
      index += 2;
    } else if (character === "$" && text[index + 1] === "(") {
      const close = findClosingParenthesis(text, index + 2);
      if (close < 0) return;
      const body = text.slice(index + 2, close);
      if (body.startsWith("(")) collectLooseSubstitutions(body.slice(1), into, nesting + 1);
      else into.push({ kind: "command", body });
      index = close + 1;
    } else if (character === "`") {
      const end = skipBacktick(text, index + 1);
      if (end < 0) return;
      into.push({ kind: "backtick", body: unescapeBacktick(text.slice(index + 1, end - 1)) });
      index = end;
    } else index += 1;
  }
}

function unescapeBacktick(body: string): string {
  return body.replace(/\\([\\`$])/g, "$1");
}

interface PendingHeredoc {
  index: number;
  delimiter: string;
  stripTabs: boolean;
}

/**
 * Scan normalized shell text. Throws {@link UnparsableCommandError} for text a shell would reject.
 *
 * @example
 * scanShellText("echo $(rm -rf /) # done").substitutions // [{ kind: "command", body: "rm -rf /" }]
 */
export function scanShellText(text: string): ScannedScript {
  let out = "";
  let syntax = "";
  const substitutions: Substitution[] = [];
  const heredocs: Heredoc[] = [];
  let pending: PendingHeredoc[] = [];
  let wordStart = true;
  let index = 0;

  // The last two non-blank characters of `syntax`, kept aside: reading them back from the growing
  // string would flatten it on every line, which is quadratic on long input.
  let tail = "";
  const emit = (shellText: string, syntaxText: string = shellText): void => {
    out += shellText;
    syntax += syntaxText;
    const significant = syntaxText.replace(/[ \t\n]/g, "");
    if (significant !== "") tail = (tail + significant).slice(-2);
  };
  const substitute = (kind: Substitution["kind"], body: string): string => {
    substitutions.push({ kind, body });
    return placeholder("S", substitutions.length - 1);
  };
  /** `$(…)`, `$((…))` or a backtick substitution starting at `index`; returns its placeholder and the index after it. */
  const readSubstitution = (at: number): { word: string; next: number } => {
    if (text[at] === "`") {
      const end = skipBacktick(text, at + 1);
      if (end < 0) throw new UnparsableCommandError("an unclosed backtick substitution");
      return { word: substitute("backtick", unescapeBacktick(text.slice(at + 1, end - 1))), next: end };
    }
    const close = findClosingParenthesis(text, at + 2);
    if (close < 0) throw new UnparsableCommandError("an unclosed $( substitution");
    const body = text.slice(at + 2, close);
    if (body.startsWith("(") && body.endsWith(")")) {
      // Arithmetic `$((…))`: a number, but substitutions inside it still run.
      collectLooseSubstitutions(body.slice(1, -1), substitutions);
      return { word: "0", next: close + 1 };
    }
    return { word: substitute("command", body), next: close + 1 };
  };

  const readHeredocBodies = (): void => {
    // `index` is at the newline that ends the line holding the heredoc operators.
    let position = index + 1;
    for (const heredoc of pending) {
      const bodyLines: string[] = [];
      while (position <= text.length) {
        const end = text.indexOf("\n", position);
        const line = text.slice(position, end < 0 ? text.length : end);
        position = end < 0 ? text.length + 1 : end + 1;
        const candidate = heredoc.stripTabs ? line.replace(/^[\t ]+/, "") : line;
        if (candidate === heredoc.delimiter) break;
        bodyLines.push(line);
      }
      const entry = heredocs[heredoc.index];
      if (entry) {
        entry.body = bodyLines.join("\n");
        if (!entry.quoted) collectLooseSubstitutions(entry.body, substitutions);
      }
    }
    pending = [];
    index = Math.min(position, text.length + 1) - 1;
  };

  while (index < text.length) {
    const character = text[index] as string;
    const next = text[index + 1];

    if (character === "'") {
      const end = text.indexOf("'", index + 1);
      if (end < 0) throw new UnparsableCommandError("an unbalanced single quote");
      emit(text.slice(index, end + 1), "_");
      index = end + 1;
      wordStart = false;
      continue;
    }
    if (character === "$" && next === "'") {
      // ANSI-C quoting: `\'` does not end it.
      let end = index + 2;
      while (end < text.length && text[end] !== "'") end += text[end] === "\\" ? 2 : 1;
      if (end >= text.length) throw new UnparsableCommandError("an unbalanced $' quote");
      emit(text.slice(index, end + 1), "_");
      index = end + 1;
      wordStart = false;
      continue;
    }
    if (character === '"') {
      let quoted = '"';
      let position = index + 1;
      let closed = false;
      while (position < text.length) {
        const inner = text[position] as string;
        if (inner === "\\") {
          if (text[position + 1] !== "\n") quoted += text.slice(position, position + 2);
          position += 2;
        } else if (inner === '"') {
          quoted += '"';
          position += 1;
          closed = true;
          break;
        } else if ((inner === "$" && text[position + 1] === "(") || inner === "`") {
          const { word, next: after } = readSubstitution(position);
          quoted += word;
          position = after;
        } else {
          quoted += inner;
          position += 1;
        }
      }
      if (!closed) throw new UnparsableCommandError("an unbalanced double quote");
      emit(quoted, "_");
      index = position;
      wordStart = false;
      continue;
    }
    if (character === "\\") {
      if (next === "\n") {
        index += 2; // a line continuation joins the lines
        continue;
      }
      if (next === undefined) {
        index += 1;
        continue;
      }
      emit(character + next, "__");
      index += 2;
      wordStart = false;
      continue;
    }
    if (character === "#") {
      if (wordStart) {
        const end = text.indexOf("\n", index);
        index = end < 0 ? text.length : end;
        continue;
      }
      // Inside a word `#` is literal for a shell, but shell-quote would start a comment there.
      emit("\\#", "#");
      index += 1;
      continue;
    }
    if (character === "\n") {
      if (pending.length > 0) readHeredocBodies();
      // A line ending in a pipe or `&&`/`||` continues on the next line.
      const continues = tail.endsWith("|") || tail === "&&" || tail === "|&";
      emit(continues ? " " : " ; ");
      index += 1;
      wordStart = true;
      continue;
    }
    if ((character === "$" && next === "(") || character === "`") {
      const { word, next: after } = readSubstitution(index);
      emit(word, word);
      index = after;
      wordStart = false;
      continue;
    }
    if ((character === "<" || character === ">") && next === "(") {
      const close = findClosingParenthesis(text, index + 2);
      if (close < 0) throw new UnparsableCommandError("an unclosed process substitution");
      const word = substitute(character === "<" ? "process-in" : "process-out", text.slice(index + 2, close));
      emit(` ${word} `, ` ${word} `);
      index = close + 1;
      wordStart = true;
      continue;
    }
    if (character === "<" && next === "<" && text[index + 2] === "<") {
      emit("<<<");
      index += 3;
      wordStart = true;
      continue;
    }
    if (character === "<" && next === "<") {
      let position = index + 2;
      const stripTabs = text[position] === "-";
      if (stripTabs) position += 1;
      while (text[position] === " " || text[position] === "\t") position += 1;
      let word = "";
      while (position < text.length && !isBlank(text[position]) && !OPERATOR_CHARACTERS.has(text[position] as string)) {
        word += text[position];
        position += 1;
      }
      if (word === "") throw new UnparsableCommandError("a heredoc operator without a delimiter");
      const quoted = /['"\\]/.test(word);
      const delimiter = word.replace(/['"\\]/g, "");
      heredocs.push({ body: "", quoted });
      pending.push({ index: heredocs.length - 1, delimiter, stripTabs });
      const marker = placeholder("H", heredocs.length - 1);
      emit(` << ${marker} `);
      index = position;
      wordStart = true;
      continue;
    }
    if (wordStart && character >= "0" && character <= "9") {
      // A file descriptor before a redirection (`2>`, `1>>`) is not an argument; drop it.
      let end = index;
      while (end < text.length && (text[end] as string) >= "0" && (text[end] as string) <= "9") end += 1;
      if (text[end] === ">" || text[end] === "<") {
        index = end;
        continue;
      }
    }
    if (isBlank(character)) {
      emit(" ");
      wordStart = true;
      index += 1;
      continue;
    }
    emit(character);
    wordStart = OPERATOR_CHARACTERS.has(character);
    index += 1;
  }
  // A heredoc opened on the last line has an empty body.
  return { text: out, syntax, substitutions, heredocs };
}

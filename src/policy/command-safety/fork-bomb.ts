/**
 * Fork bomb detection. It reads the shell syntax of the text (quoted parts blanked out) rather than
 * `shell-quote`'s tokens, because tokenizing turns `:(){ :|:& };:` into operators and loose words
 * from which the function's shape can no longer be read.
 */
import { UnparsableCommandError } from "../../errors/unparsable-command-error.js";

/** `name() {` / `name () (` / `function name {` / `function name() {`; the name is any word. */
const DEFINITIONS: readonly RegExp[] = [
  /(?:^|(?<=[\s;&|(){}]))(?:function\s+)?([^\s;&|(){}<>]+)\s*\(\s*\)\s*([{(])/g,
  /(?:^|(?<=[\s;&|(){}]))function\s+([^\s;&|(){}<>]+)\s*([{(])/g,
];

/** For each `{` and `(` in the syntax, the index of its closer (or the text's end), found in one pass. */
function closers(syntax: string): Map<number, number> {
  const result = new Map<number, number>();
  const open: number[] = [];
  for (let index = 0; index < syntax.length; index += 1) {
    const character = syntax[index];
    if (character === "{" || character === "(") open.push(index);
    else if (character === "}" || character === ")") {
      const opener = open.pop();
      if (opener !== undefined) result.set(opener, index);
    }
  }
  for (const opener of open) result.set(opener, syntax.length);
  return result;
}

const SEPARATORS = new Set([" ", "\t", "\n", ";", "&", "|", "(", ")", "{", "}"]);

/** How many times `name` stands as a word of its own between `start` and `end`, counting to two at most. */
function selfCalls(syntax: string, name: string, start: number, end: number): number {
  let calls = 0;
  let from = start;
  while (calls < 2) {
    const at = syntax.indexOf(name, from);
    if (at < 0 || at + name.length > end) break;
    const before = at === start ? " " : syntax[at - 1];
    const after = at + name.length === end ? " " : syntax[at + name.length];
    if (SEPARATORS.has(before ?? " ") && SEPARATORS.has(after ?? " ")) calls += 1;
    from = at + 1;
  }
  return calls;
}

/**
 * The name of a function that calls itself at least twice with a pipe or `&` between (so each call
 * starts two more processes), if the shell syntax defines one.
 *
 * @example
 * findForkBomb(":(){ :|:& };:")              // ":"
 * findForkBomb("bomb(){ bomb|bomb& };bomb")  // "bomb"
 * findForkBomb("build() { make; }; build")   // undefined
 */
export function findForkBomb(syntax: string): string | undefined {
  let closerOf: Map<number, number> | undefined;
  for (const definition of DEFINITIONS) {
    let examined = 0;
    for (const match of syntax.matchAll(definition)) {
      // Bounds the work on adversarial text, failing closed: no real command defines this many functions.
      examined += 1;
      if (examined > 256) throw new UnparsableCommandError("more function definitions than the classifier examines");
      closerOf ??= closers(syntax);
      const name = match[1] as string;
      const start = (match.index ?? 0) + match[0].length;
      const end = closerOf.get(start - 1) ?? syntax.length;
      if (selfCalls(syntax, name, start, end) < 2) continue;
      const body = syntax.slice(start, end);
      if (/\||(?<!&)&(?!&)/.test(body)) return name;
    }
  }
  return undefined;
}

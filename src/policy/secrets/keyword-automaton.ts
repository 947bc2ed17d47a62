/**
 * Many keywords found in one pass over a text (docs/policy.md#secrets): gitleaks' rules select
 * themselves by keyword (`vendored-secret-rules.ts`), and the secret rules' patterns are skipped
 * where none of their required literals is (`pattern-matches.ts`). Looking for each keyword with
 * `includes` reads the text once per keyword; the automaton reads it once for all of them.
 */

/**
 * All keywords in one Aho-Corasick automaton over a dense table: one lookup per character finds
 * every keyword in one pass (a trie walked from each position costs 5 to 10 times more on a
 * 12 000-character output). Hand-written: the npm packages for it are unmaintained or build an
 * object per node, which is what made the trie slow.
 */
export interface KeywordAutomaton {
  /** Symbol of each ASCII code (letters lower-cased); 0 for any character in no keyword. */
  symbols: Uint8Array;
  symbolCount: number;
  /** `transitions[state * symbolCount + symbol]`: the next state. */
  transitions: Int32Array;
  /** The groups (indices into the keyword lists it was built from) a keyword ending in each state selects, suffixes included. */
  outputs: number[][];
  /** 1 for a state with outputs: most characters end no keyword, and reading this is cheaper than `outputs`. */
  accepting: Uint8Array;
}

/**
 * The automaton of groups of keywords (lower-case ASCII; a text's capitals are read as their
 * lower case): each state's outputs name the groups with a keyword ending there.
 *
 * @example
 * const automaton = buildKeywordAutomaton([["hvs.", "s."], ["sk"]]); // group 0 and group 1
 */
export function buildKeywordAutomaton(keywordsByGroup: readonly (readonly string[])[]): KeywordAutomaton {
  const symbols = new Uint8Array(128);
  let symbolCount = 1;
  for (const keywords of keywordsByGroup) {
    for (const keyword of keywords) {
      for (const char of keyword) {
        const code = char.charCodeAt(0);
        // A keyword with a non-ASCII character cannot be in the table; gitleaks' keywords are
        // lower-case ASCII, and the secret rules' literals are kept out of it when they are not.
        if (code >= 128) throw new TypeError(`a keyword with a non-ASCII character: ${keyword}`);
        if (symbols[code] === 0) symbols[code] = symbolCount++;
      }
    }
  }
  for (let code = 65; code <= 90; code += 1) symbols[code] = symbols[code + 32]!;
  // The goto function as a trie, then completed into a DFA breadth first.
  const children: Map<number, number>[] = [new Map()];
  const outputs: number[][] = [[]];
  keywordsByGroup.forEach((keywords, group) => {
    for (const keyword of keywords) {
      let state = 0;
      for (const char of keyword) {
        const symbol = symbols[char.charCodeAt(0)]!;
        let next = children[state]!.get(symbol);
        if (next === undefined) {
          next = children.length;
          children.push(new Map());
          outputs.push([]);
          children[state]!.set(symbol, next);
        }
        state = next;
      }
      outputs[state]!.push(group);
    }
  });
  const transitions = new Int32Array(children.length * symbolCount);
  const failure = new Int32Array(children.length);
  const queue: number[] = [];
  for (let symbol = 1; symbol < symbolCount; symbol += 1) {
    const next = children[0]!.get(symbol);
    if (next !== undefined) {
      transitions[symbol] = next;
      queue.push(next);
    }
  }
  for (let head = 0; head < queue.length; head += 1) {
    const state = queue[head]!;
    outputs[state] = [...new Set([...outputs[state]!, ...outputs[failure[state]!]!])];
    for (let symbol = 1; symbol < symbolCount; symbol += 1) {
      const next = children[state]!.get(symbol);
      const fallback = transitions[failure[state]! * symbolCount + symbol]!;
      if (next === undefined) {
        transitions[state * symbolCount + symbol] = fallback;
      } else {
        transitions[state * symbolCount + symbol] = next;
        failure[next] = fallback;
        queue.push(next);
      }
    }
  }
  const accepting = Uint8Array.from(outputs, (found) => (found.length > 0 ? 1 : 0));
  return { symbols, symbolCount, transitions, outputs, accepting };
}

/**
 * Every keyword of `automaton` in `text`, in one pass: `found(group, end)` for each occurrence of a
 * keyword of `group` that ends just before `end` (an ASCII letter of the text read in either case).
 *
 * @example
 * scanKeywords(automaton, "export SK_TOKEN=…", (group, end) => console.log(group, end));
 */
export function scanKeywords(automaton: KeywordAutomaton, text: string, found: (group: number, end: number) => void): void {
  const { symbols, symbolCount, transitions, outputs, accepting } = automaton;
  let state = 0;
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    state = transitions[state * symbolCount + (code < 128 ? symbols[code]! : 0)]!;
    if (accepting[state] === 0) continue;
    const groups = outputs[state]!;
    for (let position = 0; position < groups.length; position += 1) found(groups[position]!, index + 1);
  }
}

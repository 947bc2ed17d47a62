/**
 * Runs of base64 characters, which two secret rules read: base64 that decodes to text holding a
 * secret (`secret-boundaries.ts`, runs of at least 24 characters with their padding) and an AWS
 * secret access key without its name (`secret-patterns.ts`, runs of exactly 40). Both read every
 * character of a text to find their runs, and most text has none that long: identifiers, words and
 * numbers are short. So both first ask for the text's longest run, read once per text, and stop
 * there when it is too short for them (docs/design.md#14-speed-ups-and-their-references;
 * property-tests/base64-runs.test.ts).
 */

/**
 * Whether a UTF-16 code is a base64 character: a letter, a digit, `+` or `/`.
 *
 * @example
 * isBase64Code("+".charCodeAt(0)); // true
 */
export function isBase64Code(code: number): boolean {
  return (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || code === 43 || code === 47;
}

/** The last text read: the rules ask for the same text one after the other. */
let lastText: string | undefined;
let lastLongest = 0;

/**
 * The length of the longest run of base64 characters (`isBase64Code`) in `text`, `=` padding not
 * counted.
 *
 * @example
 * longestBase64Run("key: aGVsbG8gd29ybGQ="); // 15 ("aGVsbG8gd29ybGQ")
 */
export function longestBase64Run(text: string): number {
  if (text === lastText) return lastLongest;
  let longest = 0;
  let run = 0;
  for (let index = 0; index < text.length; index += 1) {
    if (isBase64Code(text.charCodeAt(index))) {
      run += 1;
      if (run > longest) longest = run;
    } else run = 0;
  }
  lastText = text;
  lastLongest = longest;
  return longest;
}

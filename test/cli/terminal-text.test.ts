import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { jsonText, terminalSafe, terminalText } from "../../src/cli/terminal-text.js";

/* What a terminal would act on is shown escaped; everything else is kept (docs/security.md). */

const control = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

describe("terminalText", () => {
  it("escapes ESC, BEL, CR, backspace, DEL, C1 (the 8-bit CSI) and bidi controls; keeps newline, tab and every printable character", () => {
    expect(terminalText("\u001b]0;owned\u0007\u001b[2J")).toBe("\\x1b]0;owned\\x07\\x1b[2J");
    expect(terminalText("a\rb\bc\u007fd\u009b2J\u0085")).toBe("a\\x0db\\x08c\\x7fd\\x9b2J\\x85");
    expect(terminalText("\u202eevil\u2066x\u2069")).toBe("\\u202eevil\\u2066x\\u2069");
    expect(terminalText("héllo 🎉 日本語\tcol\nline — \u00a0ok")).toBe("héllo 🎉 日本語\tcol\nline — \u00a0ok");
  });

  it("leaves no control behind, changes no text without one, and a second pass changes nothing", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), (text) => {
        const shown = terminalText(text);
        expect(shown).not.toMatch(control);
        expect(terminalText(shown)).toBe(shown);
        if (!control.test(text)) expect(shown).toBe(text);
      }),
    );
  });
});

describe("terminalSafe", () => {
  it("escapes every string in objects, arrays and Maps, keys included, and keeps numbers and a __proto__ key as data", () => {
    const value = JSON.parse('{"a":["\\u001b[2J",1],"__proto__":{"b":"\\u009b"}}') as Record<string, unknown>;
    const safe = terminalSafe({ value, map: new Map([["\u001bk", { n: 2 }]]) });
    expect(safe.value).toEqual(JSON.parse('{"a":["\\\\x1b[2J",1],"__proto__":{"b":"\\\\x9b"}}'));
    expect(Object.getPrototypeOf(safe.value)).toBe(Object.prototype);
    expect([...safe.map]).toEqual([["\\x1bk", { n: 2 }]]);
  });
});

describe("jsonText", () => {
  it("is the same JSON value, with DEL, C1, U+2028/2029 and bidi controls as \\u escapes", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.string({ unit: "binary" }), (value, text) => {
        const written = jsonText({ value, text }, 2);
        // Pretty JSON's own newlines are the one control left.
        expect(written).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/);
        expect(JSON.parse(written)).toEqual(JSON.parse(JSON.stringify({ value, text })));
      }),
    );
  });
});

import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

// A test is a verdict on the code, not on the machine's load (docs/performance.md, "Tests judge the code, not the machine"): none asserts an
// upper bound on elapsed wall-clock time. Speed is measured in bench/, where a figure is reported
// against a baseline instead of failing a loaded machine.
const root = resolve(import.meta.dirname, "../..");

/** A reading of a clock that moves with wall time. */
const clockReading = /\b(?:performance\.now|Date\.now|process\.hrtime(?:\.bigint)?)\(/;
/** `expect(<argument>).toBeLessThan(` or `.toBeLessThanOrEqual(` on one line (a `.not.` in between is a lower bound). */
const upperBound = /expect\(([^\n]*?)\)\s*\.\s*toBeLessThan(?:OrEqual)?\(/g;
/** A variable holding a difference of clock readings: `const elapsed = performance.now() - started`. */
const elapsedVariable = /\b(?:const|let|var)\s+(\w+)\s*=\s*([^;\n]*)/g;

/** The upper-bound assertions on elapsed time in one source text, as `line: text`. */
function wallClockBounds(text: string): string[] {
  const elapsedNames = [...text.matchAll(elapsedVariable)]
    .filter((match) => clockReading.test(match[2] as string) && /\s-\s/.test(match[2] as string))
    .map((match) => match[1] as string);
  const findings: string[] = [];
  for (const match of text.matchAll(upperBound)) {
    const argument = match[1] as string;
    const timed = clockReading.test(argument) || elapsedNames.some((name) => new RegExp(`\\b${name}\\b`).test(argument));
    if (!timed) continue;
    const line = text.slice(0, match.index).split("\n").length;
    findings.push(`${line}: ${match[0].trim()}`);
  }
  return findings;
}

function testSources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? testSources(path) : path.endsWith(".ts") ? [path] : [];
  });
}

describe("no test asserts an upper bound on wall-clock time", () => {
  it("finds such an assertion, directly or through a variable, and leaves lower bounds and counts alone", () => {
    // The samples name the matchers through these constants, so that this file is not itself a
    // source of the assertions it looks for (a scan of the repository's test lines would find them).
    const below = "toBeLess" + "Than";
    const atMost = `${below}OrEqual`;
    expect(wallClockBounds(`const started = Date.now();\nexpect(Date.now() - started).${below}(1000);`)).toEqual([`2: expect(Date.now() - started).${below}(`]);
    expect(wallClockBounds(`const t = performance.now();\nconst elapsed = performance.now() - t;\nexpect(elapsed).${atMost}(5);`)).toEqual([`3: expect(elapsed).${atMost}(`]);
    expect(wallClockBounds(`const s = process.hrtime.bigint();\nexpect(Number(process.hrtime.bigint() - s) / 1e6).${below}(400);`)).toHaveLength(1);
    // A lower bound (a wait really happened), a count, an order of events: not wall-clock upper bounds.
    expect(wallClockBounds("expect(second - first).toBeGreaterThanOrEqual(55);")).toEqual([]);
    expect(wallClockBounds(`const started = lines.length;\nexpect(started).${below}(48);`)).toEqual([]);
    expect(wallClockBounds(`expect(types.indexOf("a")).${below}(types.indexOf("b"));`)).toEqual([]);
  });

  it("holds for every file of test/ and property-tests/", () => {
    const self = resolve(import.meta.filename);
    const findings = [...testSources(join(root, "test")), ...testSources(join(root, "property-tests"))]
      .filter((path) => path !== self)
      .flatMap((path) => wallClockBounds(readFileSync(path, "utf8")).map((finding) => `${relative(root, path)}:${finding}`));
    expect(findings).toEqual([]);
  });
});

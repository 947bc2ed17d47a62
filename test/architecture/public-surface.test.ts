import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";

// The public surface is what the four entry points export, and docs/embedding.md ("Public
// surface") lists it: a name exported but not listed, or listed under an entry point that does
// not export it, fails here.
const root = resolve(import.meta.dirname, "../..");
const entryPoints = {
  turnlog: "src/index.ts",
  "turnlog/core": "src/core.ts",
  "turnlog/testing": "src/testing/index.ts",
  "turnlog/otel": "src/otel/index.ts",
} as const;

function exportedNames(file: string): string[] {
  const text = readFileSync(resolve(root, file), "utf8");
  return [...text.matchAll(/export\s+(?:type\s+)?\{([^}]*)\}\s*from/g)].flatMap((match) =>
    (match[1] as string)
      .split(",")
      .map((name) => name.trim().replace(/^type\s+/, "").split(/\s+as\s+/).at(-1) as string)
      .filter((name) => name !== ""),
  );
}

/** The names the doc lists under each entry point's heading, as written in backticks. */
function documentedNames(): Map<string, Set<string>> {
  const doc = readFileSync(resolve(root, "docs/embedding.md"), "utf8");
  const section = doc.slice(doc.indexOf("## Public surface"));
  const body = section.slice(0, section.indexOf("\n## ", 1));
  const byEntry = new Map<string, Set<string>>();
  for (const part of body.split(/\*\*`import … from "/).slice(1)) {
    const entry = part.slice(0, part.indexOf('"'));
    byEntry.set(entry, new Set([...part.slice(part.indexOf("\n")).matchAll(/`([A-Za-z_$][\w$]*)`/g)].map((match) => match[1] as string)));
  }
  return byEntry;
}

describe("the public surface", () => {
  const documented = documentedNames();

  it("docs/embedding.md lists every entry point", () => {
    expect([...documented.keys()].sort()).toEqual(Object.keys(entryPoints).sort());
  });

  for (const [entry, file] of Object.entries(entryPoints)) {
    it(`lists exactly what ${entry} exports`, () => {
      const exported = new Set(exportedNames(file));
      const listed = documented.get(entry) ?? new Set<string>();
      expect([...exported].filter((name) => !listed.has(name))).toEqual([]);
      expect([...listed].filter((name) => !exported.has(name))).toEqual([]);
    });
  }

  it("package.json publishes the four entry points", () => {
    const manifest = JSON.parse(readFileSync(resolve(root, "package.json"), "utf8")) as { exports: Record<string, unknown> };
    expect(Object.keys(manifest.exports)).toEqual(expect.arrayContaining([".", "./core", "./testing", "./otel"]));
  });
});

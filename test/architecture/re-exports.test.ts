import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

// Each name has one import path: the module that declares it. Only the entry points re-export —
// the published ones tsup builds (the public surface, docs/embedding.md) and the two barrels a
// layer reads another through (src/reader/index.ts, the read API the CLI uses; src/contracts/index.ts).
// A module that re-exports a name declared elsewhere gives it a second path, and callers then
// import the same thing from two places (docs/architecture.md, "Layers and dependency direction").
const root = resolve(import.meta.dirname, "../..");

/** The source files tsup builds an entry from, read from tsup.config.ts so a new subpath counts at once. */
function builtEntries(): string[] {
  const config = readFileSync(join(root, "tsup.config.ts"), "utf8");
  return [...new Set([...config.matchAll(/"(src\/[^"]+\.tsx?)"/g)].map((match) => match[1] as string))];
}

const entryPoints = new Set([...builtEntries(), "src/reader/index.ts", "src/contracts/index.ts"]);

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : /\.tsx?$/.test(name) ? [path] : [];
  });
}

/**
 * The re-exports in one source text, as `line: name`: `export … from "…"` (named or `*`), and
 * `export { name }` of a name the file imported.
 */
function reExports(text: string, fileName = "module.ts"): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const imported = new Set<string>();
  for (const statement of source.statements) {
    if (ts.isImportEqualsDeclaration(statement)) imported.add(statement.name.text);
    if (!ts.isImportDeclaration(statement) || statement.importClause === undefined) continue;
    const { name, namedBindings } = statement.importClause;
    if (name !== undefined) imported.add(name.text);
    if (namedBindings === undefined) continue;
    if (ts.isNamespaceImport(namedBindings)) imported.add(namedBindings.name.text);
    else for (const element of namedBindings.elements) imported.add(element.name.text);
  }
  const findings: string[] = [];
  for (const statement of source.statements) {
    if (!ts.isExportDeclaration(statement)) continue;
    const line = source.getLineAndCharacterOfPosition(statement.getStart()).line + 1;
    const clause = statement.exportClause;
    if (clause === undefined || ts.isNamespaceExport(clause)) {
      findings.push(`${line}: * from ${(statement.moduleSpecifier as ts.StringLiteral).text}`);
      continue;
    }
    for (const element of clause.elements) {
      const local = (element.propertyName ?? element.name).text;
      if (statement.moduleSpecifier !== undefined || imported.has(local)) findings.push(`${line}: ${element.name.text}`);
    }
  }
  return findings;
}

describe("only the entry points re-export", () => {
  it("finds a re-export in each of its forms, and leaves a module's own exports alone", () => {
    expect(reExports('export { ProviderError } from "../errors/provider-error.js";')).toEqual(["1: ProviderError"]);
    expect(reExports('export type { SandboxLimits as Limits } from "./sandbox-limits.js";')).toEqual(["1: Limits"]);
    expect(reExports('export * from "./events.js";\nexport * as rules from "./rules.js";')).toEqual(["1: * from ./events.js", "2: * from ./rules.js"]);
    expect(reExports('import { UnexpectedEventError } from "../errors/unexpected-event-error.js";\n\nexport { UnexpectedEventError };')).toEqual([
      "3: UnexpectedEventError",
    ]);
    expect(reExports('import type { Budgets } from "./budgets.js";\nexport type { Budgets as Limits };')).toEqual(["2: Limits"]);
    // What the module declares itself, exported in a list or in place, is not a re-export.
    expect(reExports("const limit = 3;\nfunction cap() {}\nexport { limit, cap as capped };\nexport const other = 1;")).toEqual([]);
    expect(reExports('import { a } from "./a.js";\nexport const b = a;')).toEqual([]);
  });

  it("reads the published entry points from tsup.config.ts", () => {
    expect([...entryPoints]).toEqual(expect.arrayContaining(["src/index.ts", "src/core.ts", "src/testing/index.ts", "src/otel/index.ts"]));
  });

  it("holds for every module of src/ and machines/", () => {
    const findings = [...sources(join(root, "src")), ...sources(join(root, "machines"))]
      .map((path) => relative(root, path))
      .filter((path) => !entryPoints.has(path))
      .flatMap((path) => reExports(readFileSync(join(root, path), "utf8"), path).map((finding) => `${path}:${finding}`));
    expect(findings).toEqual([]);
  });
});

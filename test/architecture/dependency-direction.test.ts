import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

// docs/design.md#13-layout-and-dependency-direction: contracts ← log, tools, policy ← projections ← history ← providers ← core ←
// replay ← reader ← otel ← runtime ← cli. The core (fold, decider, nextStep) is shared by the live loop
// and replay; replay and the read API need no provider; the runtime is the read API plus a writer
// (docs/architecture.md). A folder may import from its own folder and lower layers only.
// Providers sit above history: each format's folder (src/providers/openai-chat/, …) holds its history
// serializer and lane, and history/ is format-neutral, taking a format's adapter from above.
const layers: Record<string, number> = {
  contracts: 0,
  // Above contracts and util, so that an error may name a contract type (a provider failure's kind).
  errors: 0.5,
  util: 0,
  log: 1,
  tools: 1,
  policy: 1,
  projections: 2,
  history: 3,
  machines: 3,
  providers: 3.5,
  core: 4,
  replay: 5,
  reader: 6,
  // Spans derived from the log (turnlog/otel): read-side, below the runtime that feeds them live.
  otel: 6.5,
  runtime: 7,
  testing: 8,
  cli: 9,
  "index.ts": 9,
  "core.ts": 9,
  // turnlog/ai-sdk: the AI SDK bridge, an entry point like the root.
  "ai-sdk.ts": 9,
  // The browser page of `turnlog view`: above everything, and it imports only types from below.
  "view-ui": 10,
};

const root = resolve(import.meta.dirname, "../..");

function files(dir: string, extensions: readonly string[] = [".ts"]): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path, extensions) : extensions.some((extension) => path.endsWith(extension)) ? [path] : [];
  });
}

function imports(file: string): { specifier: string; typeOnly: boolean }[] {
  const text = readFileSync(file, "utf8");
  return [...text.matchAll(/^(import|export)\s+(type\s+)?[^;]*?from\s+["']([^"']+)["']/gms)].map((match) => ({
    specifier: match[3] as string,
    typeOnly: match[2] !== undefined,
  }));
}

function folderOf(path: string): string {
  const parts = relative(root, path).split("/");
  return parts[0] === "machines" ? "machines" : (parts[1] as string);
}

describe("dependency direction", () => {
  const sources = [...files(join(root, "src")), ...files(join(root, "machines"))];

  it("no module imports upward", () => {
    const violations: string[] = [];
    for (const file of sources) {
      const from = folderOf(file);
      for (const { specifier } of imports(file)) {
        if (!specifier.startsWith(".")) continue;
        const resolved = resolve(file, "..", specifier);
        // package.json and other files outside the source tree are not layers.
        if (!resolved.startsWith(join(root, "src")) && !resolved.startsWith(join(root, "machines"))) continue;
        const target = folderOf(resolved);
        if (target === from) continue;
        if ((layers[target] ?? Infinity) >= (layers[from] ?? -Infinity)) violations.push(`${relative(root, file)} → ${specifier}`);
      }
    }
    expect(violations).toEqual([]);
  });

  it("the CLI reads through the read API or the runtime, never projections/, replay/ or core/ (type imports included)", () => {
    const violations: string[] = [];
    for (const file of files(join(root, "src", "cli"))) {
      for (const { specifier } of imports(file)) {
        if (!specifier.startsWith(".")) continue;
        const target = relative(join(root, "src"), resolve(file, "..", specifier)).split("/")[0];
        if (target === "projections" || target === "replay" || target === "core") violations.push(`${relative(root, file)} → ${specifier}`);
      }
    }
    expect(violations).toEqual([]);
  });

  it("declares every error class in src/errors, where each gets a code and a marker", () => {
    const outside: string[] = [];
    for (const file of sources) {
      if (folderOf(file) === "errors") continue;
      for (const match of readFileSync(file, "utf8").matchAll(/\bclass\s+(\w+)\s+extends\s+(\w*Error)\b/g)) {
        outside.push(`${relative(root, file)}: ${match[1]} extends ${match[2]}`);
      }
    }
    expect(outside).toEqual([]);
  });

  it("machines/ imports only xstate, types from src/ and its own folder", () => {
    const violations: string[] = [];
    for (const file of files(join(root, "machines"))) {
      for (const { specifier, typeOnly } of imports(file)) {
        if (specifier === "xstate" || (specifier.startsWith("../src/") && typeOnly) || /^\.\/[^/]+$/.test(specifier)) continue;
        violations.push(`${relative(root, file)} → ${specifier}`);
      }
      expect(readFileSync(file, "utf8")).not.toMatch(/Date\.now|Math\.random|new Date\(|process\./);
    }
    expect(violations).toEqual([]);
  });

  it("the browser page (src/view-ui) imports only types from the rest of turnlog, and only Preact and dagre besides", () => {
    const ui = join(root, "src", "view-ui");
    const violations: string[] = [];
    for (const file of files(ui, [".ts", ".tsx"])) {
      const text = readFileSync(file, "utf8");
      for (const { specifier, typeOnly } of imports(file)) {
        if (!specifier.startsWith(".")) {
          if (!["preact", "preact/hooks", "@dagrejs/dagre"].includes(specifier)) violations.push(`${relative(root, file)} → ${specifier}`);
          continue;
        }
        if (!resolve(file, "..", specifier).startsWith(ui) && !typeOnly) violations.push(`${relative(root, file)} → ${specifier} (a value from below the page)`);
      }
      // Side-effect imports: only the page's own stylesheet.
      for (const match of text.matchAll(/^import\s+["']([^"']+)["']/gm)) {
        if (match[1] !== "./app.css") violations.push(`${relative(root, file)} → ${match[1]}`);
      }
    }
    expect(violations).toEqual([]);
  });
});

import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { providerFormat, providerFormatNames } from "../../src/providers/formats.js";

// A provider format lives in one folder under src/providers/, named after it (docs/providers.md,
// "Adding a provider format"). Outside those folders only the registry (src/providers/formats.ts) and the
// schema of recorded names (src/contracts/provider.ts) may name a format; everything else asks
// the registry, so a new format touches its folder, the registry and the schema.
const root = resolve(import.meta.dirname, "../..");
const src = join(root, "src");
const formatFolders = providerFormatNames.map((name) => join(src, "providers", name));
const namingAllowed = [join(src, "providers", "formats.ts"), join(src, "contracts", "provider.ts")];
// The public entries re-export each format's SDK adapter and finalizers by name (the root, and
// turnlog/ai-sdk for the AI SDK bridge, which the root import must not carry).
const importAllowed = [join(src, "providers", "formats.ts"), join(src, "index.ts"), join(src, "ai-sdk.ts")];

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : /\.tsx?$/.test(path) ? [path] : [];
  });
}

const outside = files(src).filter((file) => !formatFolders.some((folder) => file.startsWith(`${folder}/`)));

/** The text without comments (a comment may name a format to explain it). */
function code(file: string): string {
  return readFileSync(file, "utf8")
    .replace(/\/\*[\s\S]*?\*\//g, "")
    .replace(/(^|[^:"'`\\])\/\/.*$/gm, "$1");
}

/** Every string the code writes of `name`, in quotes or a template. */
function naming(text: string, name: string): boolean {
  return new RegExp(`["'\`]${name.replace(/[-_]/g, "[$&]")}["'\`]`).test(text);
}

/** The ways a line branches on a provider format: a switch over one, or a comparison of one with a string. */
function formatBranches(line: string): string[] {
  const found: string[] = [];
  if (/\bswitch\s*\([^)]*\bformat\b[^)]*\)/i.test(line)) found.push(line.trim());
  // turnlog's own file formats (`turnlog-witness/1`, …) are not provider formats.
  for (const match of line.matchAll(/\bformat\b[\w?.]*\s*[!=]==?\s*["'`]([^"'`]*)|["'`]([^"'`]*)["'`]\s*[!=]==?\s*[\w?.]*\bformat\b/g)) {
    if (!(match[1] ?? match[2] ?? "").startsWith("turnlog-")) found.push(line.trim());
  }
  return found;
}

describe("provider formats", () => {
  it("the scans read the code they judge, and see what they look for", () => {
    // Empty scans would pass whatever the code did: the history, OTel and CLI code is read, and
    // each kind of violation is found in a sample.
    for (const path of ["history/native-history.ts", "otel/span-derivation.ts", "cli/commands/history-command.ts"]) expect(outside).toContain(join(src, path));
    expect(naming(code(join(src, "contracts", "provider.ts")), "openai-chat")).toBe(true);
    expect(naming('const kind = "anthropic-messages";', "anthropic-messages")).toBe(true);
    expect(formatBranches('switch (request.format) {')).toHaveLength(1);
    expect(formatBranches('if (provider.format === "openai-chat") return;')).toHaveLength(1);
    expect(formatBranches('return "anthropic-messages" !== format;')).toHaveLength(1);
    expect(formatBranches('if (record.format === "turnlog-witness/1") return;')).toEqual([]);
  });

  it("each format the schema names has its folder, whose index.ts exports the adapter the registry holds", () => {
    for (const name of providerFormatNames) {
      expect(existsSync(join(src, "providers", name, "index.ts")), `src/providers/${name}/index.ts`).toBe(true);
      expect(providerFormat(name).name).toBe(name);
    }
  });

  it("no format name or -serialized reason is written outside its folder, the registry and the schema", () => {
    const words = providerFormatNames.flatMap((name) => [name, providerFormat(name).serializedReason]);
    const violations: string[] = [];
    for (const file of outside) {
      if (namingAllowed.includes(file)) continue;
      const text = code(file);
      for (const word of words) if (naming(text, word)) violations.push(`${relative(root, file)}: "${word}"`);
    }
    expect(violations).toEqual([]);
  });

  it("nothing outside the folders switches on a format: no switch over one, no comparison of one with a string", () => {
    const violations: string[] = [];
    for (const file of outside) {
      if (namingAllowed.includes(file)) continue;
      for (const [index, line] of code(file).split("\n").entries()) {
        for (const branch of formatBranches(line)) violations.push(`${relative(root, file)}:${index + 1}: ${branch}`);
      }
    }
    expect(violations).toEqual([]);
  });

  it("code reaches a format through the registry: only it and the public entry import a format's folder", () => {
    const violations: string[] = [];
    for (const file of outside) {
      if (importAllowed.includes(file)) continue;
      for (const match of readFileSync(file, "utf8").matchAll(/from\s+["']([^"']+)["']/g)) {
        const target = resolve(file, "..", match[1] as string);
        if (formatFolders.some((folder) => target.startsWith(`${folder}/`))) violations.push(`${relative(root, file)} → ${match[1]}`);
      }
    }
    expect(violations).toEqual([]);
  });
});

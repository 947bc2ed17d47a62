import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { protectedEntryOf, protectedWorkspaceEntries } from "../../src/contracts/protected-paths.js";

describe("protectedEntryOf", () => {
  it("finds a root entry by its first component, however it is spelled", () => {
    for (const [file, entry] of [[".git/hooks/pre-commit", ".git"], ["./.VSCode/tasks.json", ".vscode"], [".git./config", ".git"], [".envrc", ".envrc"], ["TURNLOG.CONFIG.JSON", "turnlog.config.json"]] as const) {
      expect(protectedEntryOf(file)?.name, file).toBe(entry);
    }
  });

  it("finds .git at any depth, and the other entries only at the root", () => {
    expect(protectedEntryOf("vendor/lib/.git/config")?.name).toBe(".git");
    expect(protectedEntryOf("sub/.GIT/hooks/x")?.name).toBe(".git");
    expect(protectedEntryOf("docs/.vscode/settings.json")).toBeUndefined();
  });

  it("leaves the benign twins alone", () => {
    for (const file of ["src/.git-blame-ignore", ".gitignore", ".github/workflows/ci.yml", "src/git.ts", "my.git/x", ""]) expect(protectedEntryOf(file), file).toBeUndefined();
  });

  it("adds the host's names at the root", () => {
    expect(protectedEntryOf("Secrets/a", ["secrets"])).toEqual({ name: "secrets", reason: "the host protects it" });
    expect(protectedEntryOf("src/secrets/a", ["secrets"])).toBeUndefined();
  });
});

describe("the protected entries in the docs", () => {
  // Docs that cannot drift: both pages list every entry with the reason the code gives.
  for (const page of ["policy.md", "security.md"]) {
    it(`docs/${page} lists every entry with its reason`, () => {
      const text = readFileSync(new URL(`../../docs/${page}`, import.meta.url), "utf8");
      for (const entry of protectedWorkspaceEntries) {
        const row = text.split("\n").find((line) => line.startsWith(`| \`${entry.name}\``));
        expect(row, `${page}: ${entry.name}`).toBeDefined();
        expect(row?.replaceAll("`", ""), `${page}: ${entry.name}`).toContain(entry.reason);
      }
    });
  }
});

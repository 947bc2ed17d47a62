import { describe, expect, it } from "vitest";
import { commandPrefix } from "../../src/policy/command-prefix.js";

describe("commandPrefix: what an \"always\" approval of a command covers", () => {
  it("keeps the subcommand of programs that have them", () => {
    expect(commandPrefix("git status --short")).toBe("git status");
    expect(commandPrefix("  npm   test -- --watch")).toBe("npm test");
    expect(commandPrefix("cargo build --release")).toBe("cargo build");
  });

  it("is the program alone otherwise, or when the second word is an option or a path", () => {
    expect(commandPrefix("ls -la src")).toBe("ls");
    expect(commandPrefix("cat notes.md")).toBe("cat");
    expect(commandPrefix("git --no-pager log")).toBe("git");
    expect(commandPrefix("git")).toBe("git");
  });

  it("is nothing for text with no word", () => {
    expect(commandPrefix("   ")).toBeUndefined();
  });
});

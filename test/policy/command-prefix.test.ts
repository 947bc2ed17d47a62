import { describe, expect, it } from "vitest";
import { commandPrefix, commandScope, describeCommandScope } from "../../src/policy/command-prefix.js";

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

describe("commandScope: what an \"always\" approval covers from decisions version 5", () => {
  it("is the same for the same command, however it is spaced or quoted", () => {
    expect(commandScope("npm test")).toBe('[["npm","test"]]');
    expect(commandScope("  'npm'   \"test\"  ")).toBe(commandScope("npm test"));
    // A comment is kept: `npm test #x` followed by a line break runs whatever follows in a shell.
    expect(commandScope("npm test #x\nGIT_TRACE=/tmp/t git status")).not.toBe(commandScope("npm test"));
    expect(commandScope("npm test a#b; ls")).not.toBe(commandScope("npm test a"));
  });

  it("differs for any other option, argument, assignment, redirection or operator", () => {
    const approved = commandScope("npm test");
    for (const other of ["npm test --prefix=/other", "npm test --node-options=--import=data:x", "NODE_OPTIONS=x npm test", "npm test > out", "npm test; rm -rf x", "npm test | sh", "npm run test"]) {
      expect(commandScope(other), other).not.toBe(approved);
    }
  });

  it("keeps a glob apart from the same text quoted, and variables as written", () => {
    expect(commandScope("ls *.ts")).not.toBe(commandScope("ls '*.ts'"));
    expect(commandScope("ls $HOME")).toBe('[["ls","$HOME"]]');
  });

  it("reads back as the command, and is nothing for text with no word", () => {
    expect(describeCommandScope(commandScope("ls -la | head -n 3") as string)).toBe("ls -la | head -n 3");
    expect(commandScope("   ")).toBeUndefined();
    expect(commandScope("> out")).toBe('[{"op":">"},["out"]]');
  });
});

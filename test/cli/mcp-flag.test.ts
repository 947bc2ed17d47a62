import { describe, expect, it } from "vitest";
import { CliError } from "../../src/errors/cli-error.js";
import { mcpServerName, parseMcpFlag, uniqueName } from "../../src/cli/run/mcp-flag.js";

describe("parseMcpFlag: a --mcp value split as a shell splits words, nothing expanded", () => {
  it("splits on spaces and honours quotes and escapes", () => {
    expect(parseMcpFlag("npx -y @modelcontextprotocol/server-filesystem .")).toEqual({ command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "."] });
    expect(parseMcpFlag(`node "/opt/my server/index.js" --root 'a b' c\\ d`)).toEqual({ command: "node", args: ["/opt/my server/index.js", "--root", "a b", "c d"] });
  });

  it.each([
    ["", "needs a command"],
    ["server $HOME", "$HOME is not expanded"],
    ["server *.json", "the pattern *.json is not expanded"],
    ["a && b", "shell syntax"],
    ["a > out.txt", "shell syntax"],
    ["server # note", "comment"],
  ])("refuses %j as a usage error (%s)", (text, message) => {
    const error = (() => {
      try {
        parseMcpFlag(text);
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(CliError);
    expect((error as CliError).exitCode).toBe(2);
    expect((error as CliError).message).toContain(message);
  });

  it("refuses a command line holding a secret, without repeating it", () => {
    const token = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
    expect(() => parseMcpFlag(`mcp-github --token ${token}`)).toThrow(/looks like a secret/);
    try {
      parseMcpFlag(`mcp-github --token ${token}`);
    } catch (error) {
      expect((error as Error).message).not.toContain(token);
    }
  });
});

describe("mcpServerName: the package or program a command starts, undecorated", () => {
  it.each([
    [["npx", "-y", "@modelcontextprotocol/server-filesystem", "."], "filesystem"],
    [["npx", "-y", "@modelcontextprotocol/server-github@1.2.3"], "github"],
    [["node", "/repo/node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"], "everything"],
    [["/usr/bin/node", "./tools/server.mjs"], "tools"],
    [["uvx", "mcp-server-git", "--repository", "."], "git"],
    [["pnpm", "dlx", "weather-mcp"], "weather"],
    [["./bin/my-tools"], "my-tools"],
    [["docker", "run", "-i", "mcp/fetch"], "docker"],
    [["python3", "-m", "server"], "server"],
  ])("%j → %s", ([command, ...args], name) => {
    expect(mcpServerName({ command: command ?? "", args })).toBe(name);
  });

  it("makes a taken name unique", () => {
    expect(uniqueName("files", new Set())).toBe("files");
    expect(uniqueName("files", new Set(["files", "files-2"]))).toBe("files-3");
  });
});

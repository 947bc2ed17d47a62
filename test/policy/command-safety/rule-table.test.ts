import { readdirSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { classifyCommand } from "../../../src/policy/command-safety/command-safety.js";
import { commandRules } from "../../../src/policy/command-safety/rules.js";

// Names the predicate rows judge (mkfs.*, iptables*, interpreters), to look for overlaps with the named rows.
const predicateNames = ["mkfs", "mkfs.ext4", "mke2fs", "newfs", "iptables", "ip6tables-nft", "bash", "sh", "python3", "node", "nodejs", "bun", "perl", "ruby", "php"];

function rowsJudging(name: string): number[] {
  return commandRules.flatMap((rule, index) => ((typeof rule.commands === "function" ? rule.commands(name) : rule.commands.has(name)) ? [index] : []));
}

describe("the command rule table", () => {
  it("has a row for every family file, and one command is judged by one row except where order decides", () => {
    const families = readdirSync(resolve(import.meta.dirname, "../../../src/policy/command-safety/rules"))
      .map((file) => file.replace(/\.ts$/, ""))
      .filter((family) => family !== "rule-host" && family !== "credentials-and-secrets");
    // credentials-and-secrets checks every command, so it has no row of its own.
    expect(new Set(commandRules.map((rule) => rule.family))).toEqual(new Set(families));

    const names = new Set([...predicateNames, ...commandRules.flatMap((rule) => (typeof rule.commands === "function" ? [] : [...rule.commands]))]);
    const overlaps = [...names].filter((name) => rowsJudging(name).length > 1);
    expect(overlaps).toEqual(["bun"]);
  });

  it("judges `bun` as the package manager it is first: a global removal asks", () => {
    const [first, second] = rowsJudging("bun");
    expect([commandRules[first!]?.family, commandRules[second!]?.family]).toEqual(["packages-and-infrastructure", "code-execution"]);
    expect(classifyCommand("bun remove -g left-pad")).toMatchObject({ verdict: "needs-approval", rule: "approval:package-removal" });
  });

  it("tries the next row when a row's condition does not hold: `init 3` is not a shutdown, `init 0` is", () => {
    expect(classifyCommand("init 0")).toMatchObject({ verdict: "forbidden", rule: "forbidden:shutdown" });
    expect(classifyCommand("init 3").verdict).not.toBe("forbidden");
    expect(classifyCommand("nft flush ruleset")).toMatchObject({ verdict: "forbidden", rule: "forbidden:firewall-flush" });
    expect(classifyCommand("nft list ruleset").verdict).not.toBe("forbidden");
  });
});

import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "tsup";
import { afterAll, describe, expect, it } from "vitest";
import tsupConfig from "../../tsup.config.js";
import { repoRoot } from "../cli/support/turnlog-bin.js";
import * as root from "../../src/index.js";
import * as core from "../../src/core.js";

// `import { nextStep } from "turnlog/core"`: the subpath is declared, built by `npx tsup`, and loads.
describe("the turnlog/core subpath", () => {
  let out = "";

  afterAll(async () => {
    if (out !== "") await rm(out, { recursive: true, force: true });
  });

  it("is exported by package.json, with types, and built (code and declarations) by the tsup config", async () => {
    const pkg = JSON.parse(await readFile(path.join(repoRoot, "package.json"), "utf8")) as { exports: Record<string, { types: string; import: string }> };
    expect(pkg.exports["./core"]).toEqual({ types: "./dist/core.d.ts", import: "./dist/core.js" });
    // tsup.config.ts holds the package's build and, beside it, the browser page's (turnlog view).
    const configs = [tsupConfig].flat() as { entry: Record<string, string>; dts: { entry: Record<string, string> } | false; platform?: string }[];
    const config = configs.find((candidate) => candidate.platform === "node") as { entry: Record<string, string>; dts: { entry: Record<string, string> } };
    expect(config.entry.core).toBe("src/core.ts");
    expect(config.dts.entry.core).toBe("src/core.ts");
  });

  it("loads once built, and holds the machine, the fold, nextStep, the decider and the action table", async () => {
    // Built as `npx tsup` builds it (esbuild, ESM, node20), into a folder of its own so that other
    // tests reading dist/ never see a half-written file.
    out = await mkdtemp(path.join(tmpdir(), "turnlog-core-build-"));
    await build({ config: false, entry: { core: path.join(repoRoot, "src/core.ts") }, outDir: path.join(out, "dist"), format: ["esm"], target: "node20", platform: "node", splitting: true, dts: false, silent: true });
    const pkg = JSON.parse(await readFile(path.join(repoRoot, "package.json"), "utf8")) as { exports: Record<string, { import: string }> };
    const core = (await import(pathToFileURL(path.join(out, pkg.exports["./core"]!.import)).href)) as Record<string, unknown>;
    for (const name of ["providerTurnMachine", "SessionFold", "nextStep", "decide", "decideAll", "decideObserving", "actionTable", "responseEvent", "sessionStream", "latestDecisionsVersion"]) {
      expect({ name, type: typeof core[name] }).not.toEqual({ name, type: "undefined" });
    }
    const { actionTable } = core as { actionTable: Record<string, { kind: string }> };
    expect(actionTable.callProvider?.kind).toBe("effect");
  });

  it("is where the engine lives: the root exports no part a host cannot construct, and sessions come from openSession", () => {
    for (const name of ["ProviderTurnLoop", "ToolPlanRunner", "HostToolExecutor", "Session"]) expect(Object.keys(root)).not.toContain(name);
    expect(Object.keys(root)).toEqual(expect.arrayContaining(["createRuntime", "AgentLoopBuilder"]));
    expect(Object.keys(core)).toEqual(expect.arrayContaining(["providerTurnMachine", "SessionFold", "nextStep", "decideAll", "actionTable"]));
  });
});

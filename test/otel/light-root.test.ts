import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import path from "node:path";
import { build } from "tsup";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot } from "../cli/support/turnlog-bin.js";

// The root entry stays light: `import … from "turnlog"` never loads @opentelemetry/api (an
// optional peer). The built bundle is imported in a process where that package cannot be
// resolved at all; only a runtime given a tracer asks for it, and says so in a ConfigError.
describe("the root entry without @opentelemetry/api", () => {
  let outDir = "";

  beforeAll(async () => {
    await mkdir(path.join(repoRoot, "dist"), { recursive: true });
    // Inside the repository, so the bundle resolves its dependencies from node_modules.
    outDir = await mkdtemp(path.join(repoRoot, "dist", ".light-root-"));
    await build({
      config: false,
      entry: { index: path.join(repoRoot, "src/index.ts"), testing: path.join(repoRoot, "src/testing/index.ts") },
      outDir,
      format: ["esm"],
      target: "node20",
      platform: "node",
      splitting: true,
      clean: false,
      dts: false,
      silent: true,
    });
  }, 120_000);

  afterAll(async () => {
    if (outDir !== "") await rm(outDir, { recursive: true, force: true });
  });

  it("imports and runs a session; createRuntime({ tracer }) is a ConfigError naming the package", async () => {
    const hook = `export async function resolve(specifier, context, next) {
      if (specifier === "@opentelemetry/api" || specifier.startsWith("@opentelemetry/")) {
        throw Object.assign(new Error("Cannot find package '" + specifier + "'"), { code: "ERR_MODULE_NOT_FOUND" });
      }
      return next(specifier, context);
    }`;
    const script = `
      import { register } from "node:module";
      register("data:text/javascript," + encodeURIComponent(${JSON.stringify(hook)}));
      const turnlog = await import(${JSON.stringify(path.join(outDir, "index.js"))});
      const testing = await import(${JSON.stringify(path.join(outDir, "testing.js"))});
      const runtime = await turnlog.createRuntime({ log: new turnlog.MemoryEventLog(), provider: testing.scriptedProvider([{ content: "hi" }]) });
      const session = await runtime.openSession("s1");
      const outcome = await session.send("hello");
      await runtime.close();
      let traced;
      try {
        await turnlog.createRuntime({ log: new turnlog.MemoryEventLog(), provider: testing.scriptedProvider([]), tracer: { startSpan() { throw new Error("unused"); } } });
        traced = "created";
      } catch (error) {
        traced = error.code + ": " + error.message;
      }
      process.stdout.write(JSON.stringify({ status: outcome.status, traced }));
    `;
    const result = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, ["--input-type=module", "-e", script], { cwd: repoRoot }, (error, stdout, stderr) => {
        resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : 1, stdout, stderr });
      });
    });
    expect(result.stderr).toBe("");
    const report = JSON.parse(result.stdout) as { status: string; traced: string };
    expect(report.status).toBe("completed");
    expect(report.traced).toMatch(/^TURNLOG_CONFIG: tracer: live spans need the package @opentelemetry\/api/);
  });
});

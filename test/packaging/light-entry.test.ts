/**
 * The built package pays only for what a process uses (docs/embedding.md, "How the backends
 * load"; docs/performance.md, "Start-up"), checked by effect, never by time: a child process
 * imports the built root entry or runs the built `turnlog`, and reports every module it loaded — an
 * ES module through a resolve hook (`module.register`), a CommonJS one from `require.cache` (pg
 * and gpt-tokenizer are CommonJS) — and the test reads the list.
 *
 * The package is built from the sources into a folder of its own (tsup.config.ts's Node build,
 * code and source maps, no declarations), so the repository's `dist/` — which other tests rebuild
 * as a single-file CLI — is neither read nor touched. A chunk of the build is told apart by the
 * sources its source map names.
 */
import { execFile } from "node:child_process";
import { cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build, type Options } from "tsup";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import tsupConfig from "../../tsup.config.js";

const repoRoot = path.resolve(import.meta.dirname, "../..");

/** The packages a host that uses none of them must not load by importing turnlog. */
const onDemand = ["pg", "level", "classic-level", "gpt-tokenizer", "openai", "@anthropic-ai/sdk", "@modelcontextprotocol/sdk", "ajv", "ai", "@ai-sdk/provider", "@ai-sdk/provider-utils", "@ai-sdk/openai", "@ai-sdk/anthropic", "@ai-sdk/google"];

let work = "";
let bin = "";
let rootEntry = "";

/** Resolve hook: appends every URL an `import` resolves to, one a line, to the file it is given. */
const hookSource = `
import { appendFileSync } from "node:fs";
let file;
export function initialize(data) { file = data.file; }
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  appendFileSync(file, resolved.url + "\\n");
  return resolved;
}
`;
/** Preloaded with --import: registers the hook, and at exit adds every CommonJS module loaded. */
const registerSource = `
import { appendFileSync } from "node:fs";
import { createRequire, register } from "node:module";
import { pathToFileURL } from "node:url";
const file = process.env.TURNLOG_LOADED_FILE;
register("./loaded-hook.mjs", import.meta.url, { data: { file } });
const required = createRequire(import.meta.url).cache;
process.on("exit", () => appendFileSync(file, Object.keys(required).map((key) => pathToFileURL(key).href + "\\n").join("")));
`;

beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), "turnlog-light-entry-"));
  const configs = Array.isArray(tsupConfig) ? (tsupConfig as Options[]) : [];
  const node = configs.find((config) => config.platform === "node");
  if (node === undefined) throw new Error("tsup.config.ts has no Node build");
  const entry = Object.fromEntries(Object.entries(node.entry as Record<string, string>).map(([name, file]) => [name, path.join(repoRoot, file)]));
  await build({ ...node, entry, outDir: path.join(work, "dist"), dts: false, sourcemap: true, clean: false, silent: true, config: false, tsconfig: path.join(repoRoot, "tsconfig.json") });
  await mkdir(path.join(work, "bin"));
  await cp(path.join(repoRoot, "bin", "turnlog.js"), path.join(work, "bin", "turnlog.js"));
  await symlink(path.join(repoRoot, "node_modules"), path.join(work, "node_modules"), "dir");
  await writeFile(path.join(work, "loaded-hook.mjs"), hookSource);
  await writeFile(path.join(work, "loaded-register.mjs"), registerSource);
  bin = path.join(work, "bin", "turnlog.js");
  rootEntry = pathToFileURL(path.join(work, "dist", "index.js")).href;
}, 300_000);

afterAll(async () => {
  if (work !== "") await rm(work, { recursive: true, force: true });
});

interface Loaded {
  /** Packages of node_modules loaded, by name (`@scope/name` for a scoped one). */
  packages: Set<string>;
  /** Files of the build (dist/…) loaded. */
  chunks: Set<string>;
  code: number;
  stdout: string;
}

/** Runs `node --import <register> ...args` in the build's folder and returns what it loaded. */
async function loadedBy(args: readonly string[], name: string): Promise<Loaded> {
  const file = path.join(work, `${name}.loaded`);
  await writeFile(file, "");
  const { code, stdout } = await new Promise<{ code: number; stdout: string }>((resolve) => {
    execFile(process.execPath, ["--import", pathToFileURL(path.join(work, "loaded-register.mjs")).href, ...args], { cwd: work, env: { ...process.env, TURNLOG_LOADED_FILE: file, NO_COLOR: "1" } }, (error, out) =>
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : -1, stdout: out }),
    );
  });
  const packages = new Set<string>();
  const chunks = new Set<string>();
  for (const url of (await readFile(file, "utf8")).split("\n")) {
    if (!url.startsWith("file:")) continue;
    const filePath = fileURLToPath(url);
    const inModules = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(filePath);
    if (inModules !== null) packages.add(inModules[1]!);
    else if (filePath.startsWith(path.join(work, "dist") + path.sep)) chunks.add(filePath);
  }
  return { packages, chunks, code, stdout };
}

/** The repository sources a set of chunks was built from, as paths from the repository root. */
async function sourcesOf(chunks: Iterable<string>): Promise<Set<string>> {
  const sources = new Set<string>();
  for (const chunk of chunks) {
    const map = JSON.parse(await readFile(`${chunk}.map`, "utf8")) as { sources: string[] };
    for (const source of map.sources) sources.add(path.relative(repoRoot, path.resolve(path.dirname(chunk), source)));
  }
  return sources;
}

describe("the root entry", () => {
  it("loads no database driver, no provider SDK, no MCP SDK and no tokenizer on import; each loads when first used", async () => {
    const imported = await loadedBy(["--input-type=module", "-e", `await import(${JSON.stringify(rootEntry)});`], "import");
    expect(imported.code).toBe(0);
    // The hook sees what the entry does load: the build's own modules. The small dependencies every
    // import needs (zod, xstate, immer, …) are bundled into them (tsup.config.ts), so no package is
    // loaded from node_modules at all.
    expect(imported.chunks.size).toBeGreaterThan(0);
    expect([...imported.packages].filter((name) => onDemand.includes(name))).toEqual([]);
    expect([...imported.packages]).toEqual([]);

    // A host that counts tokens, opens a LevelDB log and compiles a JSON Schema loads those three.
    const using = `
      const turnlog = await import(${JSON.stringify(rootEntry)});
      const { mkdtempSync } = await import("node:fs");
      const { tmpdir } = await import("node:os");
      console.log(turnlog.defaultTokenEstimator.count("hello world"));
      const log = await turnlog.LevelEventLog.open(mkdtempSync(tmpdir() + "/turnlog-light-entry-log-"));
      await log.close();
      turnlog.jsonSchemaInput({ type: "object" });
    `;
    const used = await loadedBy(["--input-type=module", "-e", using], "used");
    expect(used.code).toBe(0);
    expect(used.stdout.trim()).toBe("2");
    for (const name of ["gpt-tokenizer", "level", "classic-level", "@modelcontextprotocol/sdk", "ajv"]) expect(used.packages).toContain(name);
    for (const name of ["pg", "openai", "@anthropic-ai/sdk"]) expect(used.packages).not.toContain(name);
  });
});

describe("the turnlog command", () => {
  it("prints --version with the command table only: no command's module and no package but commander", async () => {
    const version = await loadedBy([bin, "--version"], "version");
    const manifest = JSON.parse(await readFile(path.join(repoRoot, "package.json"), "utf8")) as { version: string };
    expect(version.stdout.trim()).toBe(manifest.version);
    expect([...version.packages]).toEqual(["commander"]);
    const sources = await sourcesOf(version.chunks);
    expect(sources).toContain("src/cli/run-cli.ts");
    expect([...sources].filter((source) => source.startsWith("src/cli/commands/") || source === "src/cli/resolve-location.ts")).toEqual([]);
  });

  it("loads the module of the command it runs, and not another command's", async () => {
    // A log with no session yet, made by the build's own LevelEventLog.
    const log = path.join(work, "empty-log");
    const made = await loadedBy(["--input-type=module", "-e", `const { LevelEventLog } = await import(${JSON.stringify(rootEntry)}); await (await LevelEventLog.open(${JSON.stringify(log)})).close();`], "made");
    expect(made.code).toBe(0);
    const sessions = await loadedBy([bin, "sessions", "--dir", log], "sessions");
    expect(sessions.code).toBe(0);
    const sources = await sourcesOf(sessions.chunks);
    expect(sources).toContain("src/cli/commands/sessions-command.ts");
    expect(sources).toContain("src/cli/resolve-location.ts");
    for (const other of ["run-command.ts", "view-command.ts", "verify-command.ts", "demo-command.ts"]) expect(sources).not.toContain(`src/cli/commands/${other}`);
  });
});

describe("the turnlog/ai-sdk entry", () => {
  it("loads nothing of the AI SDK itself: it drives the model object the host made", async () => {
    const aiSdkEntry = pathToFileURL(path.join(work, "dist", "ai-sdk.js")).href;
    const imported = await loadedBy(["--input-type=module", "-e", `const { aiSdkProvider } = await import(${JSON.stringify(aiSdkEntry)}); console.log(typeof aiSdkProvider);`], "ai-sdk");
    expect(imported.code).toBe(0);
    expect(imported.stdout.trim()).toBe("function");
    expect([...imported.packages]).toEqual([]);
  });
});

/**
 * The package's types stand alone: a consumer project that installs the packed tarball and
 * nothing but turnlog's own dependencies compiles code importing every entry point (".",
 * "./core", "./testing", "./otel") with `skipLibCheck: false`, `strict`, and `nodenext`. A public
 * `.d.ts` that imports a devDependency's types (`@types/pg`) or an optional peer's
 * (`@opentelemetry/api`) fails it: the consumer has neither.
 *
 * The package is built from the sources into a staging copy (tsup.config.ts's Node build, with its
 * type declarations), so the repository's own `dist/` — which other tests run — is never touched,
 * then packed with `npm pack` (scripts off: `prepare` would rebuild the repository's `dist/`). The
 * consumer's `node_modules` holds turnlog extracted from that tarball, as npm installs it, and
 * symbolic links to this repository's copies of turnlog's dependencies and of `@types/node`: an
 * install from the registry would fetch the same packages, more slowly and only online.
 */
import { execFile } from "node:child_process";
import { cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { build, type Options } from "tsup";
import { afterAll, describe, expect, it } from "vitest";
import tsupConfig from "../../tsup.config.js";

const run = promisify(execFile);
const repoRoot = path.resolve(import.meta.dirname, "../..");
const repoModules = path.join(repoRoot, "node_modules");

/** What a consumer writes: every entry point, and the main types used as a host uses them. */
const consumerSource = `
import { z } from "zod";
import {
  createRuntime,
  defineTool,
  errorCodes,
  LevelEventLog,
  LogUnavailableError,
  migratePostgres,
  openLog,
  PostgresEventLog,
  TurnlogError,
  type EventLog,
  type LogUnavailableKind,
  type PostgresPool,
  type RecordedEvent,
  type Runtime,
  type RuntimeOptions,
  type SendOutcome,
  type Session,
  type TurnlogEvent,
} from "turnlog";
import { nextStep, providerTurnMachine, SessionFold, type Step } from "turnlog/core";
import { given, MemoryEventLog, scriptedProvider, type ScriptStep } from "turnlog/testing";
import { createSpanEmitter, otlpJson, sessionSpans, type DerivedSpan, type OtelTracer } from "turnlog/otel";

const readFile = defineTool({
  name: "read_file",
  description: "Read a UTF-8 file in the workspace",
  risk: "read-only-local",
  input: z.object({ path: z.string() }),
  run: async ({ path }) => \`contents of \${path}\`,
});

export async function host(pool: PostgresPool, tracer: OtelTracer): Promise<SendOutcome> {
  const steps: ScriptStep[] = [{ content: "hello" }];
  const log: EventLog = new MemoryEventLog();
  const options: RuntimeOptions = { log, provider: scriptedProvider(steps), tools: [readFile], tracer };
  const runtime: Runtime = await createRuntime(options);
  const session: Session = await runtime.openSession("s1");
  const outcome = await session.send("hi");
  const events: RecordedEvent[] = await log.readStream("session-s1");
  const types: Array<TurnlogEvent["type"]> = events.map((event) => event.type as TurnlogEvent["type"]);
  const spans: DerivedSpan[] = sessionSpans(events, { sessionId: session.id });
  console.log(types, spans.map((span) => span.name));
  void otlpJson;
  void createSpanEmitter;
  void given;
  void providerTurnMachine;
  void nextStep;
  void SessionFold;
  const step: Step | undefined = undefined;
  void step;
  await runtime.close();

  const level = await LevelEventLog.open(".turnlog");
  await level.close();
  try {
    const shared = await PostgresEventLog.open(pool, { schema: "agents" });
    const { rows } = await shared.pool.query<{ n: string }>("SELECT count(*) AS n FROM agents.events");
    console.log(rows[0]?.n, await migratePostgres(shared.pool, "agents"));
    await shared.close();
  } catch (error) {
    if (LogUnavailableError.isInstance(error)) {
      const kind: LogUnavailableKind = error.kind;
      console.error(kind, error.sqlState, error.location, errorCodes[error.code].actor);
    } else if (TurnlogError.isTurnlogError(error)) {
      console.error(error.code);
    }
  }
  const reader = await openLog({ dir: ".turnlog" });
  await reader.close();
  return outcome;
}
`;

const consumerTsconfig = {
  compilerOptions: {
    strict: true,
    skipLibCheck: false,
    module: "nodenext",
    moduleResolution: "nodenext",
    target: "es2022",
    noEmit: true,
  },
  files: ["consumer.ts"],
};

const work: string[] = [];
afterAll(async () => {
  for (const directory of work) await rm(directory, { recursive: true, force: true });
});

/** tsup.config.ts's Node build (not the browser page's), written to `outDir`. */
function nodeBuild(outDir: string): Options {
  const configs = Array.isArray(tsupConfig) ? tsupConfig : [];
  const node = configs.find((config: Options) => config.platform === "node");
  if (node === undefined) throw new Error("tsup.config.ts has no Node build");
  const absolute = (entries: unknown) => Object.fromEntries(Object.entries(entries as Record<string, string>).map(([name, file]) => [name, path.join(repoRoot, file)]));
  const dts = typeof node.dts === "object" && node.dts.entry !== undefined ? { ...node.dts, entry: absolute(node.dts.entry) } : node.dts;
  return { ...node, entry: absolute(node.entry), dts, outDir, clean: false, silent: true, config: false, tsconfig: path.join(repoRoot, "tsconfig.json") };
}

describe("the packed package", () => {
  it(
    "compiles in a consumer project with skipLibCheck: false, strict and nodenext, importing every entry point, with only turnlog's dependencies installed",
    async () => {
      const root = await mkdtemp(path.join(tmpdir(), "turnlog-package-"));
      work.push(root);
      const staging = path.join(root, "staging");
      await mkdir(staging);
      const manifest = JSON.parse(await readFile(path.join(repoRoot, "package.json"), "utf8")) as {
        files: string[];
        dependencies: Record<string, string>;
        peerDependencies?: Record<string, string>;
      };
      await cp(path.join(repoRoot, "package.json"), path.join(staging, "package.json"));
      await cp(path.join(repoRoot, "README.md"), path.join(staging, "README.md"));
      for (const entry of manifest.files.filter((file) => file !== "dist")) await cp(path.join(repoRoot, entry), path.join(staging, entry), { recursive: true });
      await build(nodeBuild(path.join(staging, "dist")));

      const { stdout: packed } = await run("npm", ["pack", "--ignore-scripts", "--silent", "--pack-destination", root], { cwd: staging });
      const tarball = path.join(root, packed.trim().split("\n").at(-1) ?? "");

      const consumer = path.join(root, "consumer");
      const installed = path.join(consumer, "node_modules", "turnlog");
      await mkdir(installed, { recursive: true });
      await run("tar", ["-xzf", tarball, "-C", installed, "--strip-components=1"]);
      // ESM-only, and its README says so with what a CommonJS user does instead.
      const packedManifest = JSON.parse(await readFile(path.join(installed, "package.json"), "utf8")) as { type: string; exports: Record<string, unknown> };
      expect(packedManifest.type).toBe("module");
      expect(JSON.stringify(packedManifest.exports)).not.toContain('"require"');
      const readme = await readFile(path.join(installed, "README.md"), "utf8");
      expect(readme).toContain("ESM-only");
      expect(readme).toContain('await import("turnlog")');
      // The consumer gets turnlog's dependencies, and @types/node as any Node project in
      // TypeScript has; not turnlog's devDependencies, and not its optional peer.
      for (const name of [...Object.keys(manifest.dependencies), "@types/node"]) {
        const link = path.join(consumer, "node_modules", name);
        await mkdir(path.dirname(link), { recursive: true });
        await symlink(path.join(repoModules, name), link, "dir");
      }
      for (const absent of ["@types/pg", ...Object.keys(manifest.peerDependencies ?? {})]) expect(Object.keys(manifest.dependencies)).not.toContain(absent);
      await writeFile(path.join(consumer, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
      await writeFile(path.join(consumer, "tsconfig.json"), JSON.stringify(consumerTsconfig));
      await writeFile(path.join(consumer, "consumer.ts"), consumerSource);

      const compiled = await run(process.execPath, [path.join(repoModules, "typescript", "bin", "tsc"), "-p", consumer], { cwd: consumer }).then(
        () => "",
        (error: { stdout?: string; stderr?: string }) => `${error.stdout ?? ""}${error.stderr ?? ""}`.trim() || String(error),
      );
      expect(compiled, "tsc's errors in the consumer project").toBe("");
    },
    // Building the declarations takes about half a minute alone, and much longer on a busy machine.
    900_000,
  );
});

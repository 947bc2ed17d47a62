/**
 * Start-up: what a process pays before turnlog does anything (issue 32, "a light entry"). Each
 * command is spawned `--runs` times, round-robin (so a drift in the machine's load touches every
 * command alike), and its median wall time is compared with the median of `node -e 0`:
 *
 *   turnlog --version                       ≤ 2× node -e 0   (the command table only)
 *   turnlog sessions --dir <a demo log>     ≤ 4× node -e 0   (one command's code, one LevelDB open)
 *   import("turnlog")                       ≤ 3× node -e 0   (the root entry, no backend, no tokenizer)
 *
 * It measures the package as npm would ship it, built from the sources now: tsup.config.ts's Node
 * build (code only, no declarations; a few seconds) into a temporary folder with `bin/turnlog.js`
 * beside it and a link to this repository's node_modules. The repository's own `dist/` is never
 * read, so a stale one, or the single-file CLI the tests build (test/cli/support/turnlog-bin.ts),
 * cannot colour the figures. The demo log is recorded once, before timing, by the same build.
 *
 *   node --import tsx bench/startup.ts [--runs 15]
 *   npm run bench -- --only startup          (the suite's startup step alone)
 */
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { build, type Options } from "tsup";
import tsupConfig from "../tsup.config.js";
import { median, printRows, recordResult } from "./results.js";

const { values: options } = parseArgs({ options: { runs: { type: "string", default: "15" } } });
const runs = Number(options.runs);
if (!Number.isSafeInteger(runs) || runs < 1) throw new TypeError(`--runs takes a positive integer, got ${options.runs}`);

const root = fileURLToPath(new URL("..", import.meta.url));

/** tsup.config.ts's Node build (the package's entries, splitting on), code only, into `outDir`. */
function packageBuild(outDir: string): Options {
  const configs = Array.isArray(tsupConfig) ? (tsupConfig as Options[]) : [];
  const node = configs.find((config) => config.platform === "node");
  if (node === undefined) throw new Error("tsup.config.ts has no Node build");
  const entries = Object.fromEntries(Object.entries(node.entry as Record<string, string>).map(([name, file]) => [name, path.join(root, file)]));
  return { ...node, entry: entries, outDir, dts: false, sourcemap: false, clean: false, silent: true, config: false, tsconfig: path.join(root, "tsconfig.json") };
}

const work = mkdtempSync(path.join(tmpdir(), "turnlog-bench-startup-"));
try {
  const started = performance.now();
  await build(packageBuild(path.join(work, "dist")));
  mkdirSync(path.join(work, "bin"));
  cpSync(path.join(root, "bin", "turnlog.js"), path.join(work, "bin", "turnlog.js"));
  cpSync(path.join(root, "package.json"), path.join(work, "package.json"));
  symlinkSync(path.join(root, "node_modules"), path.join(work, "node_modules"), "dir");
  console.log(`built the package from the sources into ${work} in ${((performance.now() - started) / 1000).toFixed(1)} s`);

  const bin = path.join(work, "bin", "turnlog.js");
  const demoLog = path.join(work, "demo-log");
  const demo = spawnSync(process.execPath, [bin, "demo", "--dir", demoLog], { cwd: work, encoding: "utf8", env: { ...process.env, NO_COLOR: "1" } });
  if (demo.status !== 0) throw new Error(`turnlog demo failed (exit ${demo.status}): ${demo.stderr}`);

  const commands: { id: string; label: string; args: string[]; bound?: number }[] = [
    { id: "node", label: "node -e 0", args: ["-e", "0"] },
    { id: "version", label: "turnlog --version", args: [bin, "--version"], bound: 2 },
    { id: "sessions", label: "turnlog sessions --dir <demo log>", args: [bin, "sessions", "--dir", demoLog], bound: 4 },
    { id: "import", label: 'import("turnlog")', args: ["--input-type=module", "-e", `await import(${JSON.stringify(pathToFileURL(path.join(work, "dist", "index.js")).href)})`], bound: 3 },
  ];
  const times = new Map<string, number[]>(commands.map((command) => [command.id, []]));
  // One run of each, not timed: the first start reads the files from disk.
  for (const round of [-1, ...Array.from({ length: runs }, (_, index) => index)]) {
    for (const command of commands) {
      const begun = performance.now();
      const run = spawnSync(process.execPath, command.args, { cwd: work, stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, NO_COLOR: "1" } });
      const elapsed = performance.now() - begun;
      if (run.status !== 0) throw new Error(`${command.label} failed (exit ${run.status}): ${run.stderr.toString()}`);
      if (round >= 0) times.get(command.id)!.push(elapsed);
    }
  }

  const floor = median(times.get("node")!);
  const rows: string[][] = [["command", `median of ${runs}`, "÷ node -e 0", "bound"]];
  for (const command of commands) {
    const value = median(times.get(command.id)!);
    recordResult(`startup.${command.id}`, `start-up: ${command.label}`, value, "ms");
    const ratio = value / floor;
    if (command.bound !== undefined) recordResult(`startup.${command.id}Ratio`, `start-up: ${command.label} ÷ node -e 0`, ratio, "×");
    rows.push([command.label, `${value.toFixed(1)} ms`, command.bound === undefined ? "" : `${ratio.toFixed(2)}×`, command.bound === undefined ? "" : `≤ ${command.bound}× ${ratio <= command.bound ? "pass" : "FAIL"}`]);
  }
  printRows(rows);
} finally {
  rmSync(work, { recursive: true, force: true });
}

import { cp, mkdtemp, readdir, rm } from "node:fs/promises";
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { decisionsVersions, latestDecisionsVersion, LevelEventLog, type RecordedEvent, type ReplayReport } from "../../src/index.js";
import { demoTools } from "../../src/cli/demo/demo-runtime.js";
import { verifyChain } from "../../src/log/hash-chain.js";
import type { GateEnvironment } from "../../src/policy/gate.js";
import { formatDecisionChange } from "../../src/replay/what-if.js";
import { verifyReplay } from "../../src/replay/replay-verifier.js";
import { ToolRegistry } from "../../src/tools/tool-registry.js";
import { workspaceTools } from "../../src/tools/workspace/workspace-tools.js";
import { resolveRealPath } from "../../src/util/real-path.js";
import { fakeShell, transferTool, workspace } from "../support/tools.js";
import { runTurnlogInProcess } from "../cli/support/turnlog-in-process.js";

/*
 * Decision versions (docs/replay.md#decision-versions): every golden log of every decisions version
 * replays identical under today's code, forever; a preview under another version lists exactly the
 * decisions that version changes. Golden logs are never re-recorded (test/fixtures/logs/README.md).
 */

const fixtures = fileURLToPath(new URL("../fixtures/", import.meta.url));
const load = (name: string) => JSON.parse(readFileSync(path.join(fixtures, "logs", name), "utf8")) as RecordedEvent[];

/** A version-2 decision reads the machine through nothing: a replay that tried would diverge. */
const noMachine: GateEnvironment = {
  realPath: (target) => {
    throw new Error(`a version-2 replay read the machine for ${target}`);
  },
};
const liveResolver: GateEnvironment = { realPath: resolveRealPath };

interface JsonGolden {
  /** The decisions versions the log records: its start's, then each upgrade's. */
  versions: number[];
  tools: () => ToolRegistry;
  gate: GateEnvironment;
}

/** Every JSON golden log: a file added to test/fixtures/logs and not listed here fails the suite. */
const jsonGoldens: Record<string, JsonGolden> = {
  "v0-session.json": { versions: [1], tools: () => new ToolRegistry(workspace().tools), gate: liveResolver },
  "approval-session.json": { versions: [1], tools: () => new ToolRegistry(workspace().tools), gate: liveResolver },
  "v1-crash-session.json": { versions: [1], tools: () => new ToolRegistry(workspace().tools), gate: liveResolver },
  "v1-upgraded-to-v2-session.json": { versions: [1, 2], tools: () => new ToolRegistry(workspace().tools), gate: liveResolver },
  "v2-crash-session.json": { versions: [2], tools: () => new ToolRegistry(workspace().tools), gate: noMachine },
  // Recorded with the library's real workspace tools over a temp directory (with a symbolic link
  // leading out of it) that was deleted right after: the tools are rebuilt over the same root.
  "v2-workspace-session.json": { versions: [2], tools: () => new ToolRegistry(workspaceTools({ root: "/tmp/golden-ws-3VBcHS" })), gate: noMachine },
  // An "always" approval of `ls -la` (commandPrefix "ls"): `ls src` runs on it, an append to
  // ~/.ssh/authorized_keys is asked about (and denied). The shell is the test's, running nothing.
  "v3-always-command-session.json": { versions: [3], tools: () => new ToolRegistry([...workspace().tools, fakeShell().runCommand]), gate: noMachine },
  // Containment in full-auto, with a shell declared contained: a known-safe read, a test run, a
  // build, a dynamic command run unasked; text piped into sh and a credential read asked about
  // (denied); `rm --rec --for /` blocked. The shell is the test's, running nothing.
  "v4-contained-session.json": { versions: [4], tools: () => new ToolRegistry([...workspace().tools, fakeShell({ contained: true }).runCommand]), gate: noMachine },
  // The same in full-auto with an uncontained shell: only `git status` runs unasked; `npm test`
  // asks (containment:uncontained) and a person approves it; the rest is asked about or blocked.
  "v4-uncontained-session.json": { versions: [4], tools: () => new ToolRegistry([...workspace().tools, fakeShell().runCommand]), gate: noMachine },
  // The policy side of containment in auto-edit, uncontained, over a temp directory (deleted after
  // recording) whose `.git` file names `.repo`: an exact read runs, two inexact ones ask; writes to
  // .git/config, to .repo/hooks (through the gitdir link, recorded in gitLinks) and .vscode ask, a
  // benign write runs; "always" on `npm test` covers `npm test` and not `npm test --prefix=…`.
  "v5-policy-session.json": { versions: [5], tools: () => new ToolRegistry([...workspace().tools, fakeShell().runCommand]), gate: noMachine },
  // Token counts of version 6, with a budget of 369 over a temp directory deleted after recording:
  // a write of 4 000 `+` (one pre-tokenizer piece, counted in chunks of 256) costs 5 tokens more
  // than the encoder's whole count, so the last request summarizes the first exchange.
  "v6-token-counting-session.json": { versions: [6], tools: () => new ToolRegistry(workspace().tools), gate: noMachine },
  // Edit on approval (version 7), in ask mode with the in-memory tools: a read runs, a write of a
  // summary with a typo is held and approved with edited content; the write runs with the edit.
  "v7-edited-approval-session.json": { versions: [7], tools: () => new ToolRegistry(workspace().tools), gate: noMachine },
  // Approval deadlines of version 7: a write nobody answered within approvalTimeoutMs is denied by
  // approval:timeout at the resume after its deadline; the same write, asked again, is approved in time.
  "v7-approval-timeout-session.json": { versions: [7], tools: () => new ToolRegistry(workspace().tools), gate: noMachine },
  // A tool's needsApproval of version 7, its answers recorded before the gate: false runs, true
  // asks (approved), a throwing predicate asks (denied).
  "v7-needs-approval-session.json": { versions: [7], tools: () => new ToolRegistry([...workspace().tools, transferTool()]), gate: noMachine },
  // The ai-sdk format (@ai-sdk/openai on the Responses API against a fake server), ask mode, the
  // in-memory tools: a read runs, a write is held and approved; every answer's reasoning items
  // recorded with their encrypted content in the response's echo.
  "v7-ai-sdk-responses-session.json": { versions: [7], tools: () => new ToolRegistry(workspace().tools), gate: noMachine },
};

/** The LevelDB directories of version 1, as `turnlog demo` and `turnlog run` wrote them. */
const levelGoldens = { "v1-demo": "demo-20261202-185932-664b", "v1-run": "run-20261202-185925-ca96" } as const;
/** What `--decisions latest` lists for a LevelDB golden log, when anything: version 4 runs a known-safe `ls` unasked. */
const changedUnderLatest: Partial<Record<string, string[]>> = {
  "v1-run": ["call_ls run_command: ask (mode:ask) → allow (command=safe:read-only)"],
};

const recordedVersions = (events: readonly RecordedEvent[]) =>
  events.flatMap((event) => {
    if (event.type === "session.started") return [(event.data as { decisionsVersion?: number }).decisionsVersion ?? 1];
    if (event.type === "session.decisions.upgraded") return [(event.data as { to: number }).to];
    return [];
  });

describe("golden logs of every decisions version", () => {
  it("lists every golden log, and every decisions version has at least one", async () => {
    const files = (await readdir(path.join(fixtures, "logs"))).filter((name) => name.endsWith(".json"));
    expect(files.sort()).toEqual(Object.keys(jsonGoldens).sort());
    expect((await readdir(path.join(fixtures, "level"))).sort()).toEqual(Object.keys(levelGoldens).sort());
    const covered = new Set(Object.values(jsonGoldens).flatMap((golden) => golden.versions));
    for (const { version } of decisionsVersions) expect(covered, `no golden log of decisions version ${version}`).toContain(version);
  });

  for (const [name, golden] of Object.entries(jsonGoldens)) {
    describe(name, () => {
      const events = load(name);

      it(`records decisions version ${golden.versions.join(" then ")}`, () => {
        expect(recordedVersions(events)).toEqual(golden.versions);
      });

      it("replays identical under today's code, with an intact hash chain", async () => {
        const report = await verifyReplay(events, { registry: golden.tools(), gate: golden.gate });
        expect(report.divergences).toEqual([]);
        expect(report.changes).toEqual([]);
        expect(report).toMatchObject({ identical: true, decisionsVersion: "recorded" });
        expect(report.compared).toBeGreaterThan(0);
        const stream = `session-${(events[0]!.data as { sessionId: string }).sessionId}`;
        expect(verifyChain(stream, events.map((event) => ({ position: event.meta.streamPosition, raw: JSON.stringify(event) })))).toMatchObject({ ok: true, checked: events.length });
      });
    });
  }

  it("a version-2 log replays identical from its recorded tool definitions alone, with no host tools", async () => {
    for (const name of ["v2-crash-session.json", "v2-workspace-session.json"]) {
      const report = await verifyReplay(load(name), { registry: new ToolRegistry(), gate: noMachine });
      expect(report.divergences, name).toEqual([]);
      expect(report.toolsFromLog.length, name).toBeGreaterThan(0);
    }
  });
});

describe("the first real decision change: a crash-interrupted provider attempt (version 2)", () => {
  it("previews exactly the turn it affects in the version-1 crash log: its failure becomes a third attempt", async () => {
    const events = load("v1-crash-session.json");
    const report = await verifyReplay(events, { registry: new ToolRegistry(workspace().tools), gate: liveResolver, decisionsVersion: latestDecisionsVersion });
    expect(report.decisionsVersion).toBe(latestDecisionsVersion);
    expect(report.changes).toEqual([
      { position: 12, kind: "turn", callId: "", turnId: "turn-1", tool: "", before: { decision: "fail", rule: "provider:transport:retries-exhausted" }, after: { decision: "retry", rule: "attempt 3" } },
    ]);
    expect(report.changes.map(formatDecisionChange)).toEqual(["#12 turn-1: fail (provider:transport:retries-exhausted) → retry (attempt 3)"]);
  });

  it("and the other way: the version-2 log pinned to version 1 would have failed where it retried", async () => {
    const report = await verifyReplay(load("v2-crash-session.json"), { registry: new ToolRegistry(workspace().tools), gate: liveResolver, decisionsVersion: 1 });
    expect(report.changes).toHaveLength(1);
    expect(report.changes[0]).toMatchObject({ kind: "turn", turnId: "turn-1", before: { decision: "retry", rule: "attempt 3" }, after: { decision: "fail", rule: "provider:transport:retries-exhausted" } });
  });

  it("version 3 previewed the other way: pinned to version 2, the always-approved `ls` would have let the key through", async () => {
    const report = await verifyReplay(load("v3-always-command-session.json"), { registry: new ToolRegistry([...workspace().tools, fakeShell().runCommand]), gate: noMachine, decisionsVersion: 2 });
    expect(report.changes.map(formatDecisionChange)).toEqual([
      "#23 call_ls_src run_command: allow (approval:command=ls) → allow (approval:tool=run_command)",
      "#23 call_keys run_command: ask (mode:ask) → allow (approval:tool=run_command)",
    ]);
  });

  it("version 4 previewed the other way: under version 3 full-auto ran every command the uncontained shell was given, the attacks included", async () => {
    const report = await verifyReplay(load("v4-uncontained-session.json"), { registry: new ToolRegistry([...workspace().tools, fakeShell().runCommand]), gate: noMachine, decisionsVersion: 3 });
    expect(report.changes.filter((change) => change.kind === "call").map(formatDecisionChange)).toEqual([
      expect.stringMatching(/call_0 run_command: allow \(command=safe:read-only\) → allow \(mode:full-auto\)$/),
      expect.stringMatching(/call_1 run_command: ask \(containment:uncontained\) → allow \(mode:full-auto\)$/),
      expect.stringMatching(/call_2 run_command: ask \(command=approval:rm-rf-outside\) → allow \(mode:full-auto\)$/),
      expect.stringMatching(/call_3 run_command: block \(hard-block:command=forbidden:rm-rf-root\) → allow \(mode:full-auto\)$/),
      expect.stringMatching(/call_4 run_command: ask \(command=approval:credential-read\) → allow \(mode:full-auto\)$/),
    ]);
  });

  it("version 5 previewed the other way: under version 4 the inexact reads, the protected writes and the wider npm test would have run unasked", async () => {
    const report = await verifyReplay(load("v5-policy-session.json"), { registry: new ToolRegistry([...workspace().tools, fakeShell().runCommand]), gate: noMachine, decisionsVersion: 4 });
    expect(report.changes.filter((change) => change.kind === "call").map(formatDecisionChange)).toEqual([
      expect.stringMatching(/call_1 run_command: ask \(containment:inexact-read\) → allow \(command=safe:read-only\)$/),
      expect.stringMatching(/call_2 run_command: ask \(containment:inexact-read\) → allow \(command=safe:read-only\)$/),
      expect.stringMatching(/call_3 write_file: ask \(protected:\.git\) → allow \(mode:auto-edit\)$/),
      expect.stringMatching(/call_4 write_file: ask \(protected:\.git\) → allow \(mode:auto-edit\)$/),
      expect.stringMatching(/call_5 write_file: ask \(protected:\.vscode\) → allow \(mode:auto-edit\)$/),
      expect.stringMatching(/call_9 run_command: ask \(mode:auto-edit\) → allow \(approval:command=npm test\)$/),
    ]);
  });

  it("version 6 previewed the other way: under version 5 the whole count of the long piece fits, and the last request keeps every unit", async () => {
    const report = await verifyReplay(load("v6-token-counting-session.json"), { registry: new ToolRegistry(workspace().tools), gate: noMachine, decisionsVersion: 5 });
    expect(report.changes).toEqual([
      { position: 44, kind: "history", callId: "", turnId: "turn-5", tool: "", before: { decision: "compact", rule: "2 units before #21" }, after: { decision: "keep", rule: "every unit" } },
    ]);
    expect(report.changes.map(formatDecisionChange)).toEqual(["#44 turn-5 history: compact (2 units before #21) → keep (every unit)"]);
  });

  it("version 6 changes no decision of the older golden logs: none holds a pre-tokenizer piece longer than 256 code units", async () => {
    for (const [name, golden] of Object.entries(jsonGoldens)) {
      // The older ones: a log of version 6 or later is judged by its own version.
      if (golden.versions.some((version) => version >= 6)) continue;
      const asFive = await verifyReplay(load(name), { registry: golden.tools(), gate: golden.gate, decisionsVersion: 5 });
      const asSix = await verifyReplay(load(name), { registry: golden.tools(), gate: golden.gate, decisionsVersion: 6 });
      expect(asSix.changes, name).toEqual(asFive.changes);
      expect(asSix.divergences, name).toEqual(asFive.divergences);
    }
  });

  it("a preview under the version a log already has changes nothing", async () => {
    const report = await verifyReplay(load("v2-workspace-session.json"), { registry: new ToolRegistry(), gate: noMachine, decisionsVersion: 2 });
    expect(report).toMatchObject({ identical: true, changes: [], decisionsVersion: 2 });
  });
});

describe("version-1 LevelDB logs, through the CLI", () => {
  // The CLI's logic, run in-process (runCli): what is under test is replay, not the bin.
  const turnlog = (cwd: string, ...args: string[]) => runTurnlogInProcess(args, { cwd, env: { NO_COLOR: "1" } });
  const scratch: string[] = [];
  afterAll(async () => {
    await Promise.all(scratch.map((dir) => rm(dir, { recursive: true, force: true })));
  });
  /** A copy, since opening a LevelDB directory writes to it (its lock, its manifest). */
  const copyOf = async (name: string) => {
    const dir = await mkdtemp(path.join(tmpdir(), `turnlog-golden-${name}-`));
    scratch.push(dir);
    await cp(path.join(fixtures, "level", name), path.join(dir, ".turnlog"), { recursive: true });
    return dir;
  };

  for (const [name, sessionId] of Object.entries(levelGoldens)) {
    it(`${name}: opens, verifies, and replays identical — as recorded and under the latest decisions`, async () => {
      const dir = await copyOf(name);
      const log = await LevelEventLog.open(path.join(dir, ".turnlog"), { durability: "sync" });
      try {
        expect(await log.verify()).toMatchObject({ ok: true });
        const events = await log.readStream(`session-${sessionId}`);
        expect(recordedVersions(events)).toEqual([1]);
      } finally {
        await log.close();
      }
      const verify = await turnlog(dir, "verify");
      expect(verify.code).toBe(0);
      const replay = await turnlog(dir, "replay", sessionId);
      expect(replay.stderr).toBe("");
      expect(replay.stdout).toMatch(/^identical: \d+ decisions recomputed, 0 divergences/m);
      expect(replay.code).toBe(0);
      const latest = await turnlog(dir, "replay", sessionId, "--decisions", "latest");
      expect(latest.stdout).toContain(`decisions version ${latestDecisionsVersion} (the session recorded version 1)`);
      const changed = changedUnderLatest[name];
      if (changed === undefined) {
        expect(latest.stdout).toContain(`every decision the same under decisions version ${latestDecisionsVersion}`);
        expect(latest.code).toBe(0);
      } else {
        // The upgrade preview names exactly the calls the new rules decide otherwise, and exits 1.
        expect(latest.stdout).toContain(`would change ${changed.length} decision`);
        for (const line of changed) expect(latest.stdout).toContain(line);
        expect(latest.code).toBe(1);
      }
    });
  }

  it("the demo log replays with the demo's tools exactly (no recorded definitions needed)", async () => {
    const dir = await copyOf("v1-demo");
    const log = await LevelEventLog.open(path.join(dir, ".turnlog"), { durability: "sync" });
    try {
      const report: ReplayReport = await verifyReplay(await log.readStream(`session-${levelGoldens["v1-demo"]}`), { registry: new ToolRegistry(demoTools()) });
      expect(report).toMatchObject({ identical: true, toolsFromLog: [] });
    } finally {
      await log.close();
    }
  });

  it("lists the crash rule's change in a version-1 log with --decisions latest, and exits 1", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "turnlog-golden-crash-"));
    scratch.push(dir);
    const log = await LevelEventLog.open(path.join(dir, ".turnlog"), { durability: "sync" });
    try {
      // The JSON golden, appended (same types and data) into a real log. Its host's tools (never
      // called in it) are swapped for the demo's, which the CLI has: a version-1 log the CLI can
      // replay exactly, the way a user's crashed `turnlog demo` session would be.
      const [started, ...rest] = load("v1-crash-session.json");
      const recorded = started!.data as { tools: { name: string }[] };
      const demoToolSet = new ToolRegistry(demoTools()).snapshot().map(({ parameters: _parameters, ...recordedInVersion1 }) => recordedInVersion1);
      const tools = recorded.tools.map(({ name }) => demoToolSet.find((tool) => tool.name === name)!);
      const events = [{ ...started!, data: { ...recorded, tools } }, ...rest];
      await log.appendToStream("session-golden-crash", events.map((event) => ({ type: event.type, data: event.data })), { expectedStreamVersion: 0 });
    } finally {
      await log.close();
    }
    const asRecorded = await turnlog(dir, "replay", "golden-crash");
    expect(asRecorded.stdout).toMatch(/^identical: /m);
    expect(asRecorded.code).toBe(0);
    const preview = await turnlog(dir, "replay", "golden-crash", "--decisions", "latest");
    expect(preview.stderr).toBe("");
    const lines = preview.stdout.trimEnd().split("\n");
    expect(lines).toContain("would change 1 decision:");
    expect(lines).toContain("  #12 turn-1: fail (provider:transport:retries-exhausted) → retry (attempt 3)");
    expect(preview.code).toBe(1);
    const pinned = await turnlog(dir, "replay", "golden-crash", "--decisions", "1");
    expect(pinned.code).toBe(0);
    const unknown = await turnlog(dir, "replay", "golden-crash", "--decisions", String(latestDecisionsVersion + 1));
    expect(unknown.code).toBe(2);
    expect(unknown.stderr.trim().split("\n")).toHaveLength(1);
  });
});

import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { z } from "zod";
import { afterEach, describe, expect, it } from "vitest";
import { createLogReader, createRuntime, defineTool, LevelEventLog, RuntimeClosedError, SessionStateError, sessionStream } from "../../src/index.js";
import type { EventLog, SendOutcome } from "../../src/index.js";
import { workerProvider } from "../support/worker-script.js";
import { approvalFinalAnswer, approvalPolicy, approvalTools } from "../support/approval-host-script.js";

/**
 * `runtime.resumeAll()` in one process, on a LevelDB log on disk: runtimes that come and go stand
 * for hosts that stopped (test/runtime/resume-all-processes.test.ts kills real ones). What a user
 * notices: the sessions whose answers are in finish, once; the ones waiting for a person are not
 * touched; the report says which is which.
 */
const directories: string[] = [];
afterEach(async () => {
  await Promise.all(directories.splice(0).map((directory) => rm(directory, { recursive: true, force: true })));
});

async function setup(): Promise<{ log: EventLog; directory: string; effectsFile: string }> {
  const directory = await mkdtemp(path.join(tmpdir(), "turnlog-resume-all-"));
  directories.push(directory);
  const effectsFile = path.join(directory, "effects.txt");
  await writeFile(effectsFile, "");
  return { log: await LevelEventLog.open(path.join(directory, "log")), directory, effectsFile };
}

/** A host that sends each session its message, leaves each parked for approval and stops. */
async function park(log: EventLog, directory: string, effectsFile: string, sessionIds: readonly string[]): Promise<Map<string, string>> {
  const host = await createRuntime({ log, provider: workerProvider(), tools: approvalTools(effectsFile), policy: approvalPolicy(directory) });
  const held = new Map<string, string>();
  for (const sessionId of sessionIds) {
    const outcome = await (await host.openSession(sessionId)).send("Deploy v2");
    expect(outcome.status).toBe("awaiting-approval");
    held.set(sessionId, outcome.pendingApprovals[0]?.callId ?? "");
  }
  await host.close();
  return held;
}

/** A reviewer's runtime that answers held calls and stops, resuming nothing. */
async function answer(log: EventLog, directory: string, effectsFile: string, answers: ReadonlyArray<{ sessionId: string; callId: string; granted: boolean }>): Promise<void> {
  const reviewer = await createRuntime({ log, provider: workerProvider(), tools: approvalTools(effectsFile), policy: approvalPolicy(directory) });
  for (const { sessionId, callId, granted } of answers) {
    const session = await reviewer.openSession(sessionId, { create: false });
    if (granted) await session.approve(callId, { by: "reviewer" });
    else await session.deny(callId, { by: "reviewer" });
  }
  await reviewer.close();
}

const effectLines = async (file: string) => (await readFile(file, "utf8")).split("\n").filter((line) => line !== "");

describe("runtime.resumeAll", () => {
  it("finishes the answered session once, leaves the waiting one untouched, and says which is which", async () => {
    const { log, directory, effectsFile } = await setup();
    const held = await park(log, directory, effectsFile, ["answered", "denied", "waiting", "finished"]);
    // "finished" was answered and resumed by its host before it stopped: nothing is owed.
    await answer(log, directory, effectsFile, [
      { sessionId: "answered", callId: held.get("answered")!, granted: true },
      { sessionId: "denied", callId: held.get("denied")!, granted: false },
      { sessionId: "finished", callId: held.get("finished")!, granted: false },
    ]);
    const host = await createRuntime({ log, provider: workerProvider(), tools: approvalTools(effectsFile), policy: approvalPolicy(directory) });
    expect(await (await host.openSession("finished")).resume()).toMatchObject({ status: "completed" });
    await host.close();
    const waitingBefore = await log.readStream(sessionStream("waiting"));

    const worker = await createRuntime({ log, provider: workerProvider(), tools: approvalTools(effectsFile), policy: approvalPolicy(directory) });
    const report = await worker.resumeAll();
    expect(report.continued.map((entry) => [entry.sessionId, entry.outcome.status, entry.outcome.text]).sort()).toEqual([
      ["answered", "completed", approvalFinalAnswer],
      ["denied", "completed", approvalFinalAnswer],
    ]);
    expect(report.waiting).toEqual([{ sessionId: "waiting", callIds: [held.get("waiting")] }]);
    expect(report).toMatchObject({ skipped: [], failed: [], scanned: 4, aborted: false });
    // The finished session was told apart by its last event alone.
    expect(report.folded).toBe(3);

    // The approved deploy ran once, the denied one never; the waiting session's stream is as it was.
    expect(await effectLines(effectsFile)).toEqual([`answered ${held.get("answered")}`]);
    expect(await log.readStream(sessionStream("waiting"))).toEqual(waitingBefore);

    // Once each: a second sweep finds nothing left to continue.
    const again = await worker.resumeAll();
    expect(again).toMatchObject({ continued: [], skipped: [], failed: [], waiting: [{ sessionId: "waiting" }] });
    expect(await effectLines(effectsFile)).toHaveLength(1);
    await worker.close();

    const reader = createLogReader(log, { tools: approvalTools(effectsFile) });
    for (const sessionId of ["answered", "denied"]) expect(await reader.replay(sessionId), sessionId).toMatchObject({ identical: true });
    await log.close();
  });

  it("a session this runtime cannot continue (its approved call needs a tool it lacks) is listed as failed, and the sweep goes on", async () => {
    const { log, directory, effectsFile } = await setup();
    const held = await park(log, directory, effectsFile, ["needs-deploy", "other"]);
    await answer(log, directory, effectsFile, [...held].map(([sessionId, callId]) => ({ sessionId, callId, granted: true })));
    const versions = await Promise.all([...held.keys()].map((id) => log.streamVersion(sessionStream(id))));
    const toolless = await createRuntime({ log, provider: workerProvider(), policy: approvalPolicy(directory) });
    const report = await toolless.resumeAll();
    expect(report.failed.map((entry) => entry.sessionId).sort()).toEqual(["needs-deploy", "other"]);
    for (const { error } of report.failed) expect(SessionStateError.isInstance(error) && /deploy/.test(error.message), String(error)).toBe(true);
    expect(report).toMatchObject({ continued: [], skipped: [], waiting: [] });
    expect(await Promise.all([...held.keys()].map((id) => log.streamVersion(sessionStream(id))))).toEqual(versions);
    expect(await effectLines(effectsFile)).toEqual([]);
    await toolless.close();
    await log.close();
  });

  it("with autoResume, a session it found waiting finishes once its answer comes, without another sweep", async () => {
    const { log, directory, effectsFile } = await setup();
    const held = await park(log, directory, effectsFile, ["later"]);
    let heard!: (outcome: SendOutcome) => void;
    const outcome = new Promise<SendOutcome>((resolve) => (heard = resolve));
    const worker = await createRuntime({
      log,
      provider: workerProvider(),
      tools: approvalTools(effectsFile),
      policy: approvalPolicy(directory),
      autoResume: { onOutcome: (finished) => heard(finished), onError: (error) => heard({ status: "failed", reason: String(error), pendingApprovals: [] }) },
    });
    const before = await log.streamVersion(sessionStream("later"));
    expect(await worker.resumeAll()).toMatchObject({ continued: [], waiting: [{ sessionId: "later", callIds: [held.get("later")] }] });
    expect(await log.streamVersion(sessionStream("later"))).toBe(before);

    // A reviewer answers afterwards, through a runtime of its own on the log.
    await answer(log, directory, effectsFile, [{ sessionId: "later", callId: held.get("later")!, granted: true }]);
    expect(await outcome).toMatchObject({ status: "completed", text: approvalFinalAnswer });
    expect(await effectLines(effectsFile)).toEqual([`later ${held.get("later")}`]);
    await worker.close();
    await log.close();
  });

  for (const stopper of ["its signal", "runtime.close()"] as const) {
    it(`${stopper} stops the sweep: the session under way ends cancelled, the rest are left as they were`, async () => {
      const { log, directory, effectsFile } = await setup();
      const held = await park(log, directory, effectsFile, ["first", "second"]);
      await answer(log, directory, effectsFile, [...held].map(([sessionId, callId]) => ({ sessionId, callId, granted: true })));
      const sweep = new AbortController();
      let closed: Promise<void> | undefined;
      // The same tool, as the log records it; its run stops the sweep, as a host shutting down would.
      const deploy = defineTool({
        name: "deploy",
        description: "Deploy a version (a person approves it)",
        risk: "external-side-effect",
        input: z.object({ version: z.string() }),
        run: ({ version }) => {
          if (stopper === "its signal") sweep.abort();
          else closed ??= worker.close();
          return `deployed ${version}`;
        },
      });
      const worker = await createRuntime({ log, provider: workerProvider(), tools: [deploy], policy: approvalPolicy(directory) });
      const versions = new Map(await Promise.all([...held.keys()].map(async (id) => [id, await log.streamVersion(sessionStream(id))] as const)));
      const report = await worker.resumeAll({ signal: sweep.signal });

      expect(report.aborted).toBe(true);
      expect(report.continued).toHaveLength(1);
      expect(report.continued[0]?.outcome).toMatchObject({ status: "stopped", reason: "cancelled" });
      const left = [...held.keys()].filter((id) => id !== report.continued[0]?.sessionId);
      expect(report.skipped).toEqual(left.map((sessionId) => ({ sessionId, reason: "aborted" })));
      for (const sessionId of left) expect(await log.streamVersion(sessionStream(sessionId))).toBe(versions.get(sessionId));

      if (stopper === "its signal") {
        // An aborted signal refuses the sweep before anything is read.
        await expect(worker.resumeAll({ signal: AbortSignal.abort(new Error("shutting down")) })).rejects.toThrow("shutting down");
        await worker.close();
      } else {
        await closed;
        await expect(worker.resumeAll()).rejects.toSatisfy((error: unknown) => RuntimeClosedError.isInstance(error));
      }
      await log.close();
    });
  }
});

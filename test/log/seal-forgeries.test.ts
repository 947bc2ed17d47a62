import { readdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createRuntime, generateSealKey, LevelEventLog, loadSealKey, SealWitness, StreamSealer, sealStreamOf, verifySealedLog, type SealKey, type SealedVerifyReport } from "../../src/index.js";
import { DirectoryWitness } from "../../src/log/seal/directory-witness.js";
import { HttpWitness } from "../../src/log/seal/http-witness.js";
import { logIdentity } from "../../src/log/seal/log-identity.js";
import { sealEventType, signSeal } from "../../src/log/seal/seal-record.js";
import { SealedLogRecord } from "../../src/log/seal/sealed-log-record.js";
import type { SealOptions } from "../../src/log/seal/stream-sealer.js";
import type { SealWitnessStore } from "../../src/log/seal/seal-witness.js";
import { pendingApprovals } from "../../src/reader/index.js";
import { scriptedProvider } from "../../src/testing/index.js";
import { startAppendOnlyWitnessServer } from "../support/append-only-witness-server.js";
import { dropTail, rawStream } from "../support/level-tamper.js";
import { startBundledChild } from "../support/bundled-child.js";
import { temporary } from "../support/temporary-directories.js";
import { sequentialIds, steppingClock, workspace } from "../support/tools.js";

/*
 * Seal format 2 against the forgeries of issue 30, made as someone with the user's access but not
 * the agent's sealing runtime would make them: a turnlog host without the seal key appending to
 * the log through the library, or the log's own API, chained correctly. Each is named by verify;
 * each benign twin — a crash at every point of sealing (a real SIGKILL of a child), a clean
 * session, a log sealed in format 1 — verifies as before.
 */


const writeCall = { toolCalls: [{ id: "call_write", name: "write_file", arguments: JSON.stringify({ path: "a.txt", content: "changed" }) }] };

interface SealedLog {
  dir: string;
  keyDirectory: string;
  key: SealKey;
  seals: SealOptions & { witness: SealWitnessStore };
}

async function sealedLog(witness?: (dir: string, keyDirectory: string) => SealWitnessStore): Promise<SealedLog> {
  const dir = await temporary("turnlog-forgery-");
  const keyDirectory = await temporary("turnlog-forgery-keys-");
  const key = generateSealKey();
  const store = witness?.(dir, keyDirectory) ?? SealWitness.forLogDirectory(dir, { directory: keyDirectory });
  return { dir, keyDirectory, key, seals: { key, witness: store, record: SealedLogRecord.forLogLocation({ dir }, { directory: keyDirectory }) } };
}

/** Runs `work` with a runtime on the log: sealing with `seals`, or — an attacker's host — without. */
async function withRuntime<T>(dir: string, script: Parameters<typeof scriptedProvider>[0], seals: SealOptions | undefined, work: (runtime: Awaited<ReturnType<typeof createRuntime>>) => Promise<T>): Promise<T> {
  const log = await LevelEventLog.open(dir, { durability: "relaxed", clock: steppingClock(), ids: sequentialIds(`event-${seals === undefined ? "forger" : "host"}`) });
  const runtime = await createRuntime({ log, provider: scriptedProvider(script), tools: workspace().tools, clock: steppingClock(), ...(seals !== undefined ? { seals } : {}) });
  try {
    return await work(runtime);
  } finally {
    await runtime.close();
    await log.close();
  }
}

/** s1 held for approval of a write; s2 answered. Sealed throughout. */
async function heldAndAnswered(sealed: SealedLog): Promise<void> {
  await withRuntime(sealed.dir, [writeCall, { content: "hello" }], sealed.seals, async (runtime) => {
    expect((await (await runtime.openSession("s1")).send("change a.txt")).status).toBe("awaiting-approval");
    expect((await (await runtime.openSession("s2")).send("hi")).status).toBe("completed");
  });
}

/** Verifies the log against its key, record and witness (`null`: no witness given). */
async function verify(sealed: SealedLog, witness: SealWitnessStore | null = sealed.seals.witness): Promise<SealedVerifyReport> {
  const log = await LevelEventLog.open(sealed.dir, { durability: "relaxed" });
  try {
    const record = await sealed.seals.record?.read();
    return await verifySealedLog(log, { keys: [sealed.key], ...(witness !== null ? { witness } : {}), ...(record !== undefined ? { record } : {}) });
  } finally {
    await log.close();
  }
}

const kinds = (report: SealedVerifyReport) => report.faults.map((fault) => [fault.kind, fault.stream]);

describe("forgeries after the last seal", () => {
  it("name an approval answered by a host without the seal key (a fabricated turn.approval.granted) as unsealed-approval", async () => {
    const sealed = await sealedLog();
    await heldAndAnswered(sealed);
    expect(await verify(sealed)).toMatchObject({ ok: true, faults: [] });
    // The forger's host appends the answer through the library: chained, valid, and unannounced.
    await withRuntime(sealed.dir, [], undefined, async (runtime) => {
      const session = await runtime.openSession("s1");
      const [held] = pendingApprovals(session.state());
      await session.approve(held!.callId, { by: "mallory" });
    });
    const report = await verify(sealed);
    expect(report.ok).toBe(false);
    expect(kinds(report)).toEqual([["unsealed-approval", "session-s1"]]);
    const events = await rawStream(sealed.dir, "session-s1");
    const forged = events.find((event) => event.type === "turn.approval.granted")!;
    expect(report.faults[0]).toMatchObject({ position: forged.meta.streamPosition, eventType: "turn.approval.granted" });
    expect(report.faults[0]!.reason).toContain('by "mallory"');
    // The hash chains are whole: only the seals tell.
    expect(report.faults.some((fault) => fault.kind === "chain")).toBe(false);
  });

  it("name a denial the same way", async () => {
    const sealed = await sealedLog();
    await heldAndAnswered(sealed);
    await withRuntime(sealed.dir, [], undefined, async (runtime) => {
      const session = await runtime.openSession("s1");
      await session.deny(pendingApprovals(session.state())[0]!.callId, { by: "mallory" });
    });
    expect(kinds(await verify(sealed))).toEqual([["unsealed-approval", "session-s1"]]);
  });

  it("name a turn end appended with the log's own API, chained on correctly, as unsealed-turn-end", async () => {
    const sealed = await sealedLog();
    await heldAndAnswered(sealed);
    const log = await LevelEventLog.open(sealed.dir, { durability: "relaxed" });
    try {
      const events = await log.readStream("session-s1");
      const turnId = (events.find((event) => event.type === "turn.started")!.data as { turnId: string }).turnId;
      await log.appendToStream("session-s1", [{ type: "turn.stopped", data: { turnId, reason: "cancelled" } }], { expectedStreamVersion: events.length });
      expect((await log.verify()).ok).toBe(true);
    } finally {
      await log.close();
    }
    const report = await verify(sealed);
    expect(kinds(report)).toEqual([["unsealed-turn-end", "session-s1"]]);
    expect(report.faults[0]).toMatchObject({ eventType: "turn.stopped" });
  });

  it("name a whole session a host without the seal key added to a log that seals as unsealed-stream", async () => {
    const sealed = await sealedLog();
    await heldAndAnswered(sealed);
    await withRuntime(sealed.dir, [{ content: "I was never here" }], undefined, async (runtime) => {
      expect((await (await runtime.openSession("planted")).send("hello")).status).toBe("completed");
    });
    const report = await verify(sealed);
    expect(report.ok).toBe(false);
    expect(kinds(report)).toEqual([["unsealed-stream", "session-planted"]]);
    expect(report.faults[0]).toMatchObject({ position: 1, eventType: "session.started" });
  });
});

describe("benign twins", () => {
  it("verify a clean sealed session with an answer and its turn end as ok, nothing unsealed", async () => {
    const sealed = await sealedLog();
    await heldAndAnswered(sealed);
    await withRuntime(sealed.dir, [{ content: "written" }], sealed.seals, async (runtime) => {
      const session = await runtime.openSession("s1");
      await session.approve(pendingApprovals(session.state())[0]!.callId, { by: "alice" });
      expect((await session.resume()).status).toBe("completed");
    });
    expect(await verify(sealed)).toMatchObject({ ok: true, faults: [], unsealed: [] });
  });

  it("verify a log sealed in format 1 (an older turnlog: turn ends only) as before: an answer after its last seal is an unsealed tail", async () => {
    const dir = await temporary("turnlog-format1-");
    const key = generateSealKey();
    // Recorded unsealed, then sealed after the held turn the way turnlog sealed before format 2.
    await withRuntime(dir, [writeCall], undefined, async (runtime) => {
      expect((await (await runtime.openSession("s1")).send("change a.txt")).status).toBe("awaiting-approval");
    });
    const log = await LevelEventLog.open(dir, { durability: "relaxed" });
    const held = await log.readStream("session-s1");
    const last = held.at(-1)!;
    const formatOne = signSeal({ stream: "session-s1", version: held.length, hash: last.meta.hash, from: 1, hashes: held.map((event) => event.meta.hash), previousSignature: "", sealedAt: "2026-01-01T00:00:00.000Z", keyId: key.keyId }, key);
    expect("format" in formatOne).toBe(false);
    await log.appendToStream(sealStreamOf("session-s1"), [{ type: sealEventType, data: formatOne }]);
    await log.close();
    await withRuntime(dir, [], undefined, async (runtime) => {
      const session = await runtime.openSession("s1");
      await session.approve(pendingApprovals(session.state())[0]!.callId, { by: "alice" });
    });
    const reopened = await LevelEventLog.open(dir, { durability: "relaxed" });
    try {
      const report = await verifySealedLog(reopened, { keys: [key] });
      expect(report).toMatchObject({ ok: true, faults: [], seals: { verified: 1 }, unsealed: [{ stream: "session-s1", from: held.length + 1, to: held.length + 1 }] });
    } finally {
      await reopened.close();
    }
  });

  it("keep a session recorded before the log was sealed an unsealed stream, not a forgery, once a sealing runtime joins the log", async () => {
    const sealed = await sealedLog();
    await withRuntime(sealed.dir, [{ content: "from the old days" }], undefined, async (runtime) => {
      expect((await (await runtime.openSession("old")).send("hi")).status).toBe("completed");
    });
    await heldAndAnswered(sealed);
    const report = await verify(sealed);
    expect(report).toMatchObject({ ok: true, faults: [] });
    expect(report.unsealed).toEqual([expect.objectContaining({ stream: "session-old", from: 1 })]);
  });

  /** Runs the crash child's phase and SIGKILLs it where it stopped; resolves with the stream and position it reached. */
  async function crashAt(sealed: SealedLog, phase: string): Promise<{ stream: string; position: number }> {
    const child = await startBundledChild("seal-crash-child.ts", [sealed.dir, sealed.keyDirectory, phase]);
    await child.waitForLine((line) => line.startsWith("stopped "));
    child.child.kill("SIGKILL");
    expect((await child.exited).signal).toBe("SIGKILL");
    const [, stream, position] = child.lines.find((line) => line.startsWith("stopped "))!.split(" ");
    return { stream: stream!, position: Number(position) };
  }

  /** The held session written by the crash child, so its key, witness and record are the ones the crashes use. */
  async function heldByChild(): Promise<SealedLog> {
    const dir = await temporary("turnlog-crash-");
    const keyDirectory = await temporary("turnlog-crash-keys-");
    const child = await startBundledChild("seal-crash-child.ts", [dir, keyDirectory, "held"]);
    await child.waitForLine((line) => line === "held");
    expect((await child.exited).code).toBe(0);
    const key = (await loadSealKey(keyDirectory))!;
    return { dir, keyDirectory, key, seals: { key, witness: SealWitness.forLogDirectory(dir, { directory: keyDirectory }), record: SealedLogRecord.forLogLocation({ dir }, { directory: keyDirectory }) } };
  }

  it("verify a log whose host was killed right after an answer's append, before its seal: the answer is an unsealed tail, not a forgery", async () => {
    const sealed = await heldByChild();
    const stopped = await crashAt(sealed, "after-answer");
    expect(stopped.stream).toBe("session-s1");
    const report = await verify(sealed);
    expect(report).toMatchObject({ ok: true, faults: [] });
    expect(report.unsealed).toEqual([{ stream: "session-s1", from: stopped.position, to: stopped.position }]);
    const events = await rawStream(sealed.dir, "session-s1");
    expect(events.at(-1)?.type).toBe("turn.approval.granted");
  });

  it("verify a log whose host was killed right after the seal announcing an answer, before the answer", async () => {
    const sealed = await heldByChild();
    const before = (await rawStream(sealed.dir, "session-s1")).length;
    await crashAt(sealed, "after-announcement");
    expect((await rawStream(sealed.dir, "session-s1")).length).toBe(before);
    expect(await verify(sealed)).toMatchObject({ ok: true, faults: [], unsealed: [] });
  });

  it("verify a log whose host was killed right after a turn end's append, before its seal", async () => {
    const sealed = await heldByChild();
    const stopped = await crashAt(sealed, "after-turn-end");
    expect(stopped.stream).toBe("session-s2");
    const report = await verify(sealed);
    expect(report).toMatchObject({ ok: true, faults: [] });
    expect(report.unsealed).toEqual([expect.objectContaining({ stream: "session-s2", to: stopped.position })]);
  });

  it("verify a log whose host was killed after announcing a new session, before its first event", async () => {
    const sealed = await heldByChild();
    await crashAt(sealed, "after-birth-announcement");
    const log = await LevelEventLog.open(sealed.dir, { durability: "relaxed" });
    try {
      expect(await log.streamExists("session-s3")).toBe(false);
      expect(await log.streamVersion(sealStreamOf("session-s3"))).toBe(1);
    } finally {
      await log.close();
    }
    expect(await verify(sealed)).toMatchObject({ ok: true, faults: [] });
  });
});

describe("the witness", () => {
  it("names a deleted witness as no-witness, and a deleted log as emptied-log from the seal key's record alone", async () => {
    const sealed = await sealedLog();
    await heldAndAnswered(sealed);
    await rm(sealed.seals.witness.file);
    const report = await verify(sealed);
    expect(kinds(report)).toEqual([["no-witness", expect.stringMatching(/^session-/)]]);
    expect(report.faults[0]!.reason).toContain(`no witness at ${sealed.seals.witness.file}`);
    await rm(sealed.dir, { recursive: true, force: true });
    const record = await sealed.seals.record!.read();
    expect(record).toMatchObject({ log: logIdentity({ dir: sealed.dir }).label, witness: sealed.seals.witness.file });
    const gone = await verifySealedLog(undefined, { keys: [sealed.key], witness: sealed.seals.witness, record: record! });
    expect(gone.faults.map((fault) => fault.kind)).toEqual(["no-witness", "emptied-log"]);
  });

  it("a directory witness (where the attacker cannot rewrite) tells a dropped tail removed with its seals", async () => {
    const witnessDirectory = await temporary("turnlog-witness-dir-");
    const sealed = await sealedLog((dir) => new DirectoryWitness(witnessDirectory, logIdentity({ dir })));
    const besideKey = SealWitness.forLogDirectory(sealed.dir, { directory: sealed.keyDirectory });
    await heldAndAnswered(sealed);
    await withRuntime(sealed.dir, [{ content: "written" }], sealed.seals, async (runtime) => {
      const session = await runtime.openSession("s1");
      await session.approve(pendingApprovals(session.state())[0]!.callId, { by: "alice" });
      await session.resume();
    });
    expect(await verify(sealed)).toMatchObject({ ok: true, faults: [] });
    // The attacker drops s1's answer and what followed, seals and all. A witness file beside the
    // key could be rolled back with them; the directory's records are where the attacker cannot write.
    const seals = await rawStream(sealed.dir, sealStreamOf("session-s1"));
    const heldVersion = (seals.map((seal) => seal.data as { version: number; next?: unknown[] }).find((seal) => seal.next !== undefined && seal.version > 0) ?? { version: 0 }).version;
    expect(heldVersion).toBeGreaterThan(0);
    await dropTail(sealed.dir, "session-s1", heldVersion);
    const report = await verify(sealed);
    expect(kinds(report)).toEqual([["dropped-tail", "session-s1"]]);
    expect(report.faults[0]).toMatchObject({ position: heldVersion + 1 });
    // The runtime kept its witness there only: nothing beside the key to roll back or to trust.
    expect(await besideKey.exists()).toBe(false);
  });

  it("an HTTP witness on 127.0.0.1 that only adds records tells a dropped tail; the client cannot remove what it recorded", async () => {
    const server = await startAppendOnlyWitnessServer();
    try {
      const sealed = await sealedLog((dir) => new HttpWitness(server.url, logIdentity({ dir })));
      await heldAndAnswered(sealed);
      await withRuntime(sealed.dir, [{ content: "written" }], sealed.seals, async (runtime) => {
        const session = await runtime.openSession("s1");
        await session.approve(pendingApprovals(session.state())[0]!.callId, { by: "alice" });
        await session.resume();
      });
      const name = logIdentity({ dir: sealed.dir }).name;
      expect(server.records.get(name)?.length).toBeGreaterThanOrEqual(3);
      expect(await verify(sealed)).toMatchObject({ ok: true, faults: [], witness: { file: server.url, streams: 2 } });
      // The attacker drops the tail and tries to take the witness's records back.
      const seals = await rawStream(sealed.dir, sealStreamOf("session-s1"));
      const heldVersion = (seals.map((seal) => seal.data as { version: number; next?: unknown[] }).find((seal) => seal.next !== undefined && seal.version > 0) ?? { version: 0 }).version;
      await dropTail(sealed.dir, "session-s1", heldVersion);
      const deleted = await fetch(`${server.url}/logs/${name}/seals`, { method: "DELETE" });
      expect(deleted.status).toBe(405);
      const report = await verify(sealed);
      expect(kinds(report)).toEqual([["dropped-tail", "session-s1"]]);
      // A verifier told of no witness is told by the seals that there was one.
      const unwitnessed = await verify(sealed, null);
      expect(unwitnessed.faults.map((fault) => fault.kind)).toContain("no-witness");
      expect(unwitnessed.faults.find((fault) => fault.kind === "no-witness")!.reason).toContain(server.url);
    } finally {
      await server.close();
    }
  });

  it("reports an HTTP witness that cannot be reached as witness-unreadable, never as an empty witness", async () => {
    const server = await startAppendOnlyWitnessServer();
    const sealed = await sealedLog((dir) => new HttpWitness(server.url, logIdentity({ dir })));
    try {
      await heldAndAnswered(sealed);
    } finally {
      await server.close();
    }
    const report = await verify(sealed);
    expect(report.faults.map((fault) => fault.kind)).toEqual(["witness-unreadable"]);
    expect(report.faults[0]!.reason).toContain(`the witness at ${server.url} cannot be reached`);
  });

  it("a directory witness skips a record cut short by a crash, and is not fooled by text appended to a record", async () => {
    const witnessDirectory = await temporary("turnlog-witness-dir-");
    const sealed = await sealedLog((dir) => new DirectoryWitness(witnessDirectory, logIdentity({ dir })));
    await heldAndAnswered(sealed);
    const folder = path.join(witnessDirectory, logIdentity({ dir: sealed.dir }).name);
    const before = await sealed.seals.witness.read();
    await writeFile(path.join(folder, "ffffffffffffffff-999999999999.json"), '{"format":"turnlog-witness-record/1","stream":"session-s1","vers');
    const first = (await readdir(folder)).filter((name) => name.endsWith(".json")).sort()[0]!;
    await writeFile(path.join(folder, first), `${await readFile(path.join(folder, first), "utf8")}{"version":1}\n`);
    expect(await sealed.seals.witness.read()).toEqual(before);
    expect(await verify(sealed)).toMatchObject({ ok: true, faults: [] });
  });
});

describe("two sealers on one log", () => {
  it("a sealer whose remembered head another process's seal made stale signs again from the log's last seal", async () => {
    const sealed = await sealedLog();
    const log = await LevelEventLog.open(sealed.dir, { durability: "relaxed" });
    const host = new StreamSealer(log, sealed.seals);
    const approver = new StreamSealer(log, sealed.seals);
    try {
      await log.appendToStream("host-notes", [{ type: "noted", data: { n: 1 } }]);
      expect((await host.seal("host-notes"))?.version).toBe(1);
      // Another process (here: another sealer) appends and seals in between.
      await log.appendToStream("host-notes", [{ type: "noted", data: { n: 2 } }]);
      expect((await approver.seal("host-notes"))?.version).toBe(2);
      await log.appendToStream("host-notes", [{ type: "noted", data: { n: 3 } }]);
      await host.announce("host-notes", 3, [{ type: "noted", data: { n: 4 } }]);
      await log.appendToStream("host-notes", [{ type: "noted", data: { n: 4 } }]);
      expect((await host.seal("host-notes"))?.version).toBe(4);
      const report = await verifySealedLog(log, { keys: [sealed.key], witness: sealed.seals.witness });
      expect(report).toMatchObject({ ok: true, faults: [], unsealed: [], seals: { verified: 4 } });
    } finally {
      host.dispose();
      approver.dispose();
      await log.close();
    }
  });
});

import { chmod, cp, rm, stat } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  createRuntime,
  generateSealKey,
  LevelEventLog,
  loadOrCreateSealKey,
  loadSealKey,
  SealWitness,
  sealStreamOf,
  verifySealedLog,
  type SealKey,
  type SealedVerifyReport,
} from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";
import { dropTail, rawStream, rechainStream, deleteStream, truncateLogFiles } from "../support/level-tamper.js";
import { temporary } from "../support/temporary-directories.js";
import { sequentialIds, steppingClock, workspace } from "../support/tools.js";


interface Sealed {
  dir: string;
  key: SealKey;
  witness: SealWitness;
}

/**
 * Two sessions into a real LevelDB log, sealed: s1 writes a file after alice approves it, then
 * reads one; s2 only reads. Returns where the log, key and witness are.
 */
async function recordSealedSessions(options: { seals?: boolean } = {}): Promise<Sealed> {
  const dir = await temporary("turnlog-seals-");
  const keyDirectory = await temporary("turnlog-keys-");
  const key = generateSealKey();
  const witness = SealWitness.forLogDirectory(dir, { directory: keyDirectory });
  const ws = workspace();
  const log = await LevelEventLog.open(dir, { durability: "relaxed", clock: steppingClock(), ids: sequentialIds("event") });
  const runtime = await createRuntime({
    log,
    provider: scriptedProvider([
      { toolCalls: [{ id: "call_write", name: "write_file", arguments: JSON.stringify({ path: "a.txt", content: "changed" }) }] },
      { content: "written" },
      { toolCalls: [{ id: "call_read", name: "read_file", arguments: JSON.stringify({ path: "b.txt" }) }] },
      { content: "beta" },
      { content: "hello from s2" },
    ]),
    tools: ws.tools,
    clock: steppingClock(),
    ids: sequentialIds("session"),
    ...(options.seals === false ? {} : { seals: { key, witness } }),
  });
  const s1 = await runtime.openSession("s1");
  const held = await s1.send("change a.txt");
  expect(held.status).toBe("awaiting-approval");
  await s1.approve("call_write", { by: "alice", note: "fine" });
  expect((await s1.resume()).status).toBe("completed");
  expect((await s1.send("read b.txt")).status).toBe("completed");
  const s2 = await runtime.openSession("s2");
  expect((await s2.send("hi")).status).toBe("completed");
  await runtime.close();
  await log.close();
  return { dir, key, witness };
}

async function verifyDirectory(sealed: Sealed): Promise<SealedVerifyReport> {
  const log = await LevelEventLog.open(sealed.dir, { durability: "relaxed" });
  try {
    return await verifySealedLog(log, { keys: [sealed.key], witness: sealed.witness });
  } finally {
    await log.close();
  }
}

describe("sealed logs", () => {
  it("verify an untouched sealed log: every seal good, nothing unsealed, the witness agreeing", async () => {
    const sealed = await recordSealedSessions();
    const report = await verifyDirectory(sealed);
    expect(report).toMatchObject({ ok: true, faults: [], unsealed: [], seals: { sealedStreams: 2, keyIds: [sealed.key.keyId] }, witness: { file: sealed.witness.file, streams: 2 } });
    // A seal after the held turn, after the approval, after each completed turn; s2's after its turn.
    expect(report.seals.verified).toBeGreaterThanOrEqual(5);
    const seals = await rawStream(sealed.dir, sealStreamOf("session-s1"));
    expect(seals.map((event) => event.type)).toEqual(Array(seals.length).fill("log.stream.sealed"));
  });

  it("change no recorded decision and no session event: the sealed log's sessions equal an unsealed run's", async () => {
    const sealed = await recordSealedSessions();
    const plain = await recordSealedSessions({ seals: false });
    for (const stream of ["session-s1", "session-s2"]) {
      const withSeals = await rawStream(sealed.dir, stream);
      const without = await rawStream(plain.dir, stream);
      // Global positions differ (seals take some), so hashes do; every event's type and data are the same.
      expect(withSeals.map(({ type, data, meta }) => ({ type, data, position: meta.streamPosition }))).toEqual(
        without.map(({ type, data, meta }) => ({ type, data, position: meta.streamPosition })),
      );
    }
  });

  it("name a forged approver: the approval rewritten and the chain re-computed", async () => {
    const sealed = await recordSealedSessions();
    let approvalPosition = 0;
    await rechainStream(sealed.dir, "session-s1", (events) =>
      events.map((event) => {
        if (event.type === "turn.approval.granted") {
          approvalPosition = event.meta.streamPosition;
          (event.data as { by: string }).by = "mallory";
        }
        return event;
      }),
    );
    const report = await verifyDirectory(sealed);
    expect(report.ok).toBe(false);
    // The chain itself is consistent: only the seal shows the rewrite.
    expect(report.faults.map((fault) => fault.kind)).toEqual(["forged-approval"]);
    expect(report.faults[0]).toMatchObject({ stream: "session-s1", position: approvalPosition, eventType: "turn.approval.granted" });
    expect(report.reason).toContain('by "mallory"');
  });

  it("name a rewritten command: the model's call changed and re-chained", async () => {
    const sealed = await recordSealedSessions();
    await rechainStream(sealed.dir, "session-s1", (events) =>
      events.map((event) => {
        if (event.type === "turn.provider.responded") {
          const data = event.data as { toolCalls: Array<{ argumentsText: string }> };
          for (const call of data.toolCalls) call.argumentsText = call.argumentsText.replace("a.txt", "b.txt");
        }
        return event;
      }),
    );
    const report = await verifyDirectory(sealed);
    expect(report.faults[0]).toMatchObject({ kind: "rewritten", stream: "session-s1", eventType: "turn.provider.responded" });
    expect(report).toMatchObject({ ok: false, stream: "session-s1" });
  });

  it("name an event deleted from the middle and the rest re-chained", async () => {
    const sealed = await recordSealedSessions();
    await rechainStream(sealed.dir, "session-s1", (events) => events.filter((event) => event.meta.streamPosition !== 3));
    const report = await verifyDirectory(sealed);
    expect(report.faults[0]).toMatchObject({ kind: "rewritten", stream: "session-s1", position: 3 });
  });

  it("name truncation: events removed from a stream's end while its seals stay", async () => {
    const sealed = await recordSealedSessions();
    const events = await rawStream(sealed.dir, "session-s1");
    await rechainStream(sealed.dir, "session-s1", (all) => all.slice(0, all.length - 4));
    const report = await verifyDirectory(sealed);
    expect(report.faults[0]).toMatchObject({ kind: "truncated", stream: "session-s1", position: events.length - 3 });
  });

  it("name a dropped tail: events and their seals removed together, chain and seals still valid — the witness tells", async () => {
    const sealed = await recordSealedSessions();
    const seals = await rawStream(sealed.dir, sealStreamOf("session-s1"));
    // The first seal that covers events (a seal at version 0 announces the stream's first events).
    const firstSealVersion = seals.map((seal) => (seal.data as { version: number }).version).find((version) => version > 0) ?? 0;
    expect(firstSealVersion).toBeGreaterThan(0);
    await dropTail(sealed.dir, "session-s1", firstSealVersion);
    const log = await LevelEventLog.open(sealed.dir, { durability: "relaxed" });
    try {
      // The rest is a valid, sealed log: without the witness only its absence is wrong — the seals say one was kept.
      const unwitnessed = await verifySealedLog(log, { keys: [sealed.key] });
      expect(unwitnessed.faults.map((fault) => fault.kind)).toEqual(["no-witness"]);
      expect(unwitnessed.faults[0]?.reason).toContain(sealed.witness.file);
      const report = await verifySealedLog(log, { keys: [sealed.key], witness: sealed.witness });
      expect(report.faults.map((fault) => fault.kind)).toEqual(["dropped-tail"]);
      expect(report.faults[0]).toMatchObject({ stream: "session-s1", position: firstSealVersion + 1 });
    } finally {
      await log.close();
    }
  });

  it("name a deleted stream, seals and all", async () => {
    const sealed = await recordSealedSessions();
    await deleteStream(sealed.dir, "session-s2");
    const report = await verifyDirectory(sealed);
    expect(report.faults.map((fault) => [fault.kind, fault.stream])).toEqual([["deleted-stream", "session-s2"]]);
  });

  it("name a log emptied by truncating its .log files (truncate -s 0 .turnlog/*.log)", async () => {
    const sealed = await recordSealedSessions();
    expect(await truncateLogFiles(sealed.dir)).not.toEqual([]);
    const report = await verifyDirectory(sealed);
    expect(report.checked).toBe(0);
    expect(report).toMatchObject({ ok: false, faults: [{ kind: "emptied-log" }] });
  });

  it("name a deleted log directory from the witness alone", async () => {
    const sealed = await recordSealedSessions();
    await rm(sealed.dir, { recursive: true, force: true });
    const report = await verifySealedLog(undefined, { keys: [sealed.key], witness: sealed.witness });
    expect(report).toMatchObject({ ok: false, faults: [{ kind: "emptied-log" }] });
  });

  it("refuse seals by a key the verifier does not trust, and a seal whose signature was edited", async () => {
    const sealed = await recordSealedSessions();
    const log = await LevelEventLog.open(sealed.dir, { durability: "relaxed" });
    try {
      expect((await verifySealedLog(log, { keys: [generateSealKey()] })).faults[0]).toMatchObject({ kind: "unknown-key", sealPosition: 1 });
    } finally {
      await log.close();
    }
    // The seal's time edited and its stream re-chained: the signature no longer covers it.
    await rechainStream(sealed.dir, sealStreamOf("session-s2"), (seals) => seals.map((seal) => ({ ...seal, data: { ...(seal.data as object), sealedAt: "2020-01-01T00:00:00.000Z" } })));
    expect((await verifyDirectory(sealed)).faults[0]).toMatchObject({ kind: "bad-signature", stream: "session-s2" });
  });

  it("verify a log recorded before seals (the golden LevelDB fixture) as ok and wholly unsealed", async () => {
    const dir = await temporary("turnlog-old-");
    await cp(path.resolve("test/fixtures/level/v1-demo"), dir, { recursive: true });
    const log = await LevelEventLog.open(dir, { durability: "relaxed" });
    try {
      const report = await verifySealedLog(log, { keys: [] });
      expect(report).toMatchObject({ ok: true, faults: [], seals: { verified: 0, sealedStreams: 0 }, witness: null });
      expect(report.unsealed.length).toBeGreaterThan(0);
      expect(report.unsealed.every((tail) => tail.from === 1 && tail.to >= 1)).toBe(true);
    } finally {
      await log.close();
    }
  });
});

describe("the seal key", () => {
  it("is made on first use with mode 0600 in a directory of mode 0700, and read back the same", async () => {
    const parent = await temporary("turnlog-config-");
    const directory = path.join(parent, "turnlog");
    const key = await loadOrCreateSealKey(directory);
    expect((await stat(directory)).mode & 0o777).toBe(0o700);
    expect((await stat(path.join(directory, "seal-key.pem"))).mode & 0o777).toBe(0o600);
    expect((await loadOrCreateSealKey(directory)).keyId).toBe(key.keyId);
  });

  it("is refused when others can read it", async () => {
    const directory = await temporary("turnlog-config-");
    await loadOrCreateSealKey(directory);
    await chmod(path.join(directory, "seal-key.pem"), 0o644);
    await expect(loadSealKey(directory)).rejects.toThrow(/can be read by others/);
  });
});

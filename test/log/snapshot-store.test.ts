import { createHash } from "node:crypto";
import { readdir, rm } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { LevelEventLog } from "../../src/log/level/level-event-log.js";
import { FileSnapshotStore } from "../../src/log/snapshot-files.js";
import { MemorySnapshotStore, type SnapshotStore } from "../../src/log/snapshot-store.js";
import { describeWithPostgres, postgresFixtures } from "../support/postgres.js";
import { temporary } from "../support/temporary-directories.js";

const digest = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const bytes = (text: string) => new TextEncoder().encode(text);

/** What every snapshot store does, whatever holds it. */
function runSnapshotStoreConformance(name: string, open: () => Promise<SnapshotStore>): void {
  describe(`${name} (snapshot store)`, () => {
    it("keeps chunks by digest and records by stream and position, hands them back, lists positions ascending", async () => {
      const store = await open();
      const chunk = bytes("chunk of elements");
      await store.putChunk(digest(chunk), chunk);
      await store.putChunk(digest(chunk), chunk);
      expect(Buffer.from((await store.getChunk(digest(chunk))) ?? [])).toEqual(Buffer.from(chunk));
      expect(await store.getChunk(digest(bytes("never stored")))).toBeUndefined();

      await store.putRecord("session-a", 4_000, bytes("at 4000"));
      await store.putRecord("session-a", 2_000, bytes("at 2000"));
      await store.putRecord("session-b", 10, bytes("b at 10"));
      expect(await store.positions("session-a")).toEqual([2_000, 4_000]);
      expect(await store.positions("session-b")).toEqual([10]);
      expect(await store.positions("session-none")).toEqual([]);
      expect(Buffer.from((await store.getRecord("session-a", 2_000)) ?? []).toString()).toBe("at 2000");
      expect(await store.getRecord("session-a", 3_000)).toBeUndefined();

      // A record replaces whole the one at its position.
      await store.putRecord("session-a", 2_000, bytes("again"));
      expect(Buffer.from((await store.getRecord("session-a", 2_000)) ?? []).toString()).toBe("again");

      await store.deleteRecord("session-a", 2_000);
      await store.deleteRecord("session-a", 2_000);
      expect(await store.positions("session-a")).toEqual([4_000]);

      await store.clear();
      expect(await store.positions("session-a")).toEqual([]);
      expect(await store.getChunk(digest(chunk))).toBeUndefined();
      // Usable after a clear.
      await store.putRecord("session-a", 1, bytes("one"));
      expect(await store.positions("session-a")).toEqual([1]);
      await store.close();
    });

    it("waits for background writes (idle, close), swallows their failures, and drops writes after close", async () => {
      const store = await open();
      let release: () => void = () => undefined;
      const gate = new Promise<void>((resolve) => (release = resolve));
      store.track(async () => {
        await gate;
        await store.putRecord("session-a", 7, bytes("late"));
      });
      store.track(async () => {
        throw new Error("a failed snapshot write is only a cache miss");
      });
      const idle = store.idle();
      release();
      await idle;
      expect(await store.positions("session-a")).toEqual([7]);
      await store.close();
      store.track(() => store.putRecord("session-a", 8, bytes("after close")));
      await store.putRecord("session-a", 9, bytes("after close"));
      await store.idle();
      expect(await store.positions("session-a")).toEqual([7]);
    });
  });
}

runSnapshotStoreConformance("MemorySnapshotStore", async () => new MemorySnapshotStore());
runSnapshotStoreConformance("FileSnapshotStore", async () => new FileSnapshotStore(path.join(await temporary("turnlog-snapshots-"), "snapshots")));

describeWithPostgres("PostgreSQL", () => {
  const fixtures = postgresFixtures();
  runSnapshotStoreConformance("PostgresSnapshotStore", async () => (await fixtures.open(fixtures.schema("snapstore"))).snapshots);
});

describe("FileSnapshotStore", () => {
  it("lives in snapshots/ inside a LevelDB log's directory, which LevelDB leaves alone; a crash's temporary file is never read", async () => {
    const directory = await temporary("turnlog-snapshot-dir-");
    const log = await LevelEventLog.open(directory, { durability: "relaxed", answers: false });
    await log.appendToStream("session-a", [{ type: "test.event", data: {} }]);
    await log.snapshots.putRecord("session-a", 1, bytes("record"));
    await log.close();
    expect(await readdir(path.join(directory, "snapshots"))).toEqual(["streams"]);
    const reopened = await LevelEventLog.open(directory, { durability: "relaxed", answers: false });
    expect(await reopened.readStream("session-a")).toHaveLength(1);
    expect(await reopened.snapshots.positions("session-a")).toEqual([1]);
    const [streamDirectory] = await readdir(path.join(directory, "snapshots", "streams"));
    const records = path.join(directory, "snapshots", "streams", streamDirectory as string);
    // What a crash between write and rename leaves.
    await import("node:fs/promises").then(({ writeFile }) => writeFile(path.join(records, "0000000000000002.ab12cd.tmp"), "torn"));
    expect(await reopened.snapshots.positions("session-a")).toEqual([1]);
    await reopened.close();
  });

  it("does not make again a log directory removed under a write", async () => {
    const parent = await temporary("turnlog-snapshot-gone-");
    const directory = path.join(parent, "log");
    const store = new FileSnapshotStore(path.join(directory, "snapshots"));
    await expect(store.putRecord("session-a", 1, bytes("x"))).rejects.toThrow();
    expect(await readdir(parent)).toEqual([]);
    await rm(parent, { recursive: true, force: true });
  });
});

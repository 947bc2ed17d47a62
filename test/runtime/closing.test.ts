import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createRuntime, LevelEventLog, LogLockedError } from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";

/**
 * Who closes the log: `runtime.close()` closes a log the runtime opened itself, and leaves a log
 * the host passed in open for the host. A second open of a log this process still holds says so,
 * instead of blaming another process.
 */
const directories: string[] = [];
afterEach(async () => {
  await Promise.all(directories.splice(0).map((directory) => rm(directory, { recursive: true, force: true })));
});

async function freshDirectory(): Promise<string> {
  const directory = await mkdtemp(path.join(tmpdir(), "turnlog-closing-"));
  directories.push(directory);
  return directory;
}

describe("closing", () => {
  it("runtime.close() leaves a log the host passed in open: the host can still read and write it", async () => {
    const log = await LevelEventLog.open(await freshDirectory());
    const runtime = await createRuntime({ log, provider: scriptedProvider([{ content: "hello" }]) });
    await (await runtime.openSession("s1")).send("hi");
    await runtime.close();

    expect((await log.readStream("session-s1", { maxCount: 100 })).at(-1)?.type).toBe("turn.completed");
    await log.appendToStream("host-notes", [{ type: "note", data: {} }]);
    await log.close();
  });

  it("opening a log this process still holds names this process, and how to free it", async () => {
    const directory = await freshDirectory();
    const log = await LevelEventLog.open(directory);
    const runtime = await createRuntime({ log, provider: scriptedProvider([]) });
    await runtime.close();

    const reopened = LevelEventLog.open(directory);
    await expect(reopened).rejects.toSatisfy((error: unknown) => LogLockedError.isInstance(error) && error.inThisProcess);
    await expect(reopened).rejects.toThrow(/already open in this process.*runtime\.close\(\) does not close a log passed to createRuntime/);

    await log.close();
    const again = await LevelEventLog.open(directory);
    await again.close();
  });

  it("runtime.close() closes a log the runtime opened itself: the directory can be opened again at once", async () => {
    const directory = await freshDirectory();
    const previous = process.env.TURNLOG_DIR;
    process.env.TURNLOG_DIR = directory;
    try {
      const runtime = await createRuntime({ provider: scriptedProvider([]) });
      await runtime.close();
    } finally {
      if (previous === undefined) delete process.env.TURNLOG_DIR;
      else process.env.TURNLOG_DIR = previous;
    }
    const log = await LevelEventLog.open(directory);
    await log.close();
  });
});

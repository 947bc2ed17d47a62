import { execFile, spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { useDemoSession } from "./support/demo-fixture.js";
import { repoRoot } from "./support/turnlog-bin.js";

const run = promisify(execFile);

/*
 * `--follow` runs as the built bin, a child process, since the point is a process that keeps
 * following until Ctrl-C (SIGINT) while another appends; the demo it follows is recorded, and the
 * unknown session refused, in-process.
 */

/** A `turnlog events --follow` child, with its output as it arrives and a way to wait for some of it. */
function startFollower(args: string[], cwd: string) {
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, [path.join(repoRoot, "bin", "turnlog.js"), "events", ...args, "--follow", "--interval", "50"], {
    cwd,
    env: { ...process.env, NO_COLOR: "1", TURNLOG_DIR: "" },
  });
  let stdout = "";
  let stderr = "";
  const waiters: { until: (out: string) => boolean; resolve: () => void }[] = [];
  const check = () => {
    for (const waiter of [...waiters]) {
      if (!waiter.until(stdout)) continue;
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  };
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
    check();
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return {
    child,
    exited,
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    /** Resolves once the output so far satisfies `until` (no time limit of its own: the test's applies). */
    waitFor(until: (out: string) => boolean): Promise<void> {
      return new Promise((resolve, reject) => {
        waiters.push({ until, resolve });
        exited.then((code) => reject(new Error(`the follower exited (${code}) first; stderr: ${stderr}`)));
        check();
      });
    },
  };
}

/** Appends user messages to the session from another process (the follower must not keep it out). */
async function appendFromAnotherProcess(cwd: string, logDir: string, sessionId: string, ...texts: string[]): Promise<void> {
  // Run from the repository, so that tsx resolves; the log is named by its absolute path.
  await run(process.execPath, ["--import", "tsx", path.join(repoRoot, "test/cli/support/append-to-session.ts"), path.resolve(cwd, logDir), sessionId, ...texts], { cwd: repoRoot });
}

const jsonLines = (out: string) =>
  out
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as { type: string; data: { content?: string }; meta: { streamPosition: number } });

describe("turnlog events --follow", () => {
  const demo = useDemoSession("events-follow");

  it("prints the recorded events, then those another process appends, one JSON object per line, until SIGINT (exit 0)", async () => {
    const recorded = JSON.parse((await demo.turnlog("events", demo.sessionId, "--dir", demo.logDir, "--json")).stdout) as unknown[];
    const follower = startFollower([demo.sessionId, "--dir", demo.logDir, "--json"], demo.workDir);
    await follower.waitFor((out) => jsonLines(out).length === recorded.length);

    await appendFromAnotherProcess(demo.workDir, demo.logDir, demo.sessionId, "first from elsewhere");
    await follower.waitFor((out) => out.includes("first from elsewhere"));
    await appendFromAnotherProcess(demo.workDir, demo.logDir, demo.sessionId, "second from elsewhere", "third from elsewhere");
    await follower.waitFor((out) => out.includes("third from elsewhere"));

    follower.child.kill("SIGINT");
    expect(await follower.exited).toBe(0);
    const lines = jsonLines(follower.stdout);
    // Every position once, in order: the recorded ones, then the three appended.
    expect(lines.map((event) => event.meta.streamPosition)).toEqual(Array.from({ length: recorded.length + 3 }, (_, index) => index + 1));
    expect(lines.slice(-3).map((event) => [event.type, event.data.content])).toEqual([
      ["session.user_message.added", "first from elsewhere"],
      ["session.user_message.added", "second from elsewhere"],
      ["session.user_message.added", "third from elsewhere"],
    ]);
  }, 120_000);

  it("prints new events as timeline lines without --json", async () => {
    const follower = startFollower([demo.sessionId, "--dir", demo.logDir], demo.workDir);
    await follower.waitFor((out) => out.includes("turn.completed"));
    await appendFromAnotherProcess(demo.workDir, demo.logDir, demo.sessionId, "a timeline line from elsewhere");
    await follower.waitFor((out) => out.includes("a timeline line from elsewhere"));
    follower.child.kill("SIGINT");
    expect(await follower.exited).toBe(0);
    const appended = follower.stdout.split("\n").filter((line) => line.includes("a timeline line from elsewhere"));
    expect(appended).toHaveLength(1);
    expect(appended[0]).toContain("session.user_message.added");
  }, 120_000);

  it("refuses an unknown session in one line", async () => {
    const result = await demo.turnlog("events", "no-such-session", "--dir", demo.logDir, "--follow");
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^turnlog: no session "no-such-session"/);
  });
});

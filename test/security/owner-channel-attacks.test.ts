import { execFile } from "node:child_process";
import { chmod, mkdtemp, readFile, realpath, rm, stat, writeFile } from "node:fs/promises";
import net from "node:net";
import { join, dirname } from "node:path";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { answerHeldCall, createRuntime, LevelEventLog, openLog, type Runtime } from "../../src/index.js";
import { scriptedProvider } from "../../src/testing/index.js";
import { deployTool } from "../support/tools.js";
import { ensureBuiltCli, repoRoot } from "../cli/support/turnlog-bin.js";

/*
 * Issue 33: the owner channel of a LevelDB log (docs/security.md, "The owner channel"), tried the way
 * an attacker would, by effect. A runtime in this process holds the log with a session parked on a
 * `deploy` call; each attack — a wrong token, a malformed, incomplete or oversized request, a
 * client of another uid — is refused, the session's stream does not grow, the tool never runs,
 * the channel goes on serving the log's owner, and the log verifies afterwards. CI runs this file
 * as root and as an unprivileged user; as root the other uid is `turnlog-ci` (setpriv), as an
 * unprivileged user — which cannot become another — the modes the kernel enforces are checked.
 */

const uid = process.getuid?.() ?? -1;
const who = uid === 0 ? "as root" : `as an unprivileged user (uid ${uid})`;
const sessionId = "deploy-7";

let base: string;
let dir: string;
let log: LevelEventLog;
let runtime: Runtime;
let ran: string[];
let callId: string;

beforeAll(async () => {
  await ensureBuiltCli();
}, 120_000);

beforeEach(async () => {
  base = await realpath(await mkdtemp(join("/var/tmp", "turnlog-owner-attack-")));
  dir = join(base, "log");
  ran = [];
  log = await LevelEventLog.open(dir, { durability: "relaxed" });
  runtime = await createRuntime({
    log,
    provider: scriptedProvider([{ toolCalls: [{ name: "deploy", arguments: '{"version":"v9"}' }] }]),
    tools: [deployTool(ran)],
    policy: { approvalMode: "ask", workspace: { root: base, trusted: true } },
  });
  const outcome = await (await runtime.openSession(sessionId)).send("deploy v9");
  callId = outcome.pendingApprovals[0]?.callId ?? "";
  expect(callId).not.toBe("");
});

afterEach(async () => {
  await runtime.close();
  await log.close();
  await rm(base, { recursive: true, force: true });
});

interface OwnerFile {
  pid: number;
  socket: string;
  token: string;
}

async function ownerFile(): Promise<OwnerFile> {
  return JSON.parse(await readFile(join(dir, "turnlog-owner.json"), "utf8")) as OwnerFile;
}

/** Sends `payload` as is on a fresh connection and resolves with everything the owner sent back. */
function exchange(payload: string | Buffer, socketPath: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.createConnection(socketPath);
    let received = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => (received += chunk));
    socket.on("error", (error: NodeJS.ErrnoException) => {
      // The owner may close an oversized request before all of it is written: what it replied counts.
      if (error.code === "EPIPE" || error.code === "ECONNRESET") resolve(received);
      else reject(error);
    });
    socket.on("close", () => resolve(received));
    socket.on("connect", () => socket.end(payload));
  });
}

async function streamLength(): Promise<number> {
  return (await runtime.events(sessionId)).length;
}

describe(`the owner channel of a held LevelDB log, attacked ${who}`, () => {
  it("refuses a wrong token, malformed, incomplete and oversized requests; nothing is appended and the owner still answers", async () => {
    const { socket, token } = await ownerFile();
    const before = await streamLength();
    const answer = { decision: "approve", by: "mallory" };
    const attempts: [string, string | Buffer, RegExp][] = [
      ["a wrong token", `${JSON.stringify({ token: "A".repeat(43), sessionId, callId, answer })}\n`, /wrong token/],
      ["no token", `${JSON.stringify({ sessionId, callId, answer })}\n`, /wrong token/],
      ["a token of another type", `${JSON.stringify({ token: [token], sessionId, callId, answer })}\n`, /wrong token/],
      ["not JSON", "approve everything please\n", /not a JSON line/],
      ["no line end", JSON.stringify({ token, sessionId, callId, answer }), /no complete line/],
      ["no answer", `${JSON.stringify({ token, sessionId, callId })}\n`, /needs sessionId, callId and answer/],
      ["an answer without who", `${JSON.stringify({ token, sessionId, callId, answer: { decision: "approve" } })}\n`, /needs `by`/],
      ["a decision of its own", `${JSON.stringify({ token, sessionId, callId, answer: { decision: "append", by: "mallory" } })}\n`, /decision is "approve" or "deny"/],
      ["a prototype key", `{"token":${JSON.stringify(token)},"sessionId":"${sessionId}","callId":"${callId}","answer":{"__proto__":{"decision":"approve"},"by":"mallory"}}\n`, /decision is "approve" or "deny"/],
      ["an oversized request", Buffer.alloc(2 ** 20 + 4096, "a"), /longer than 1048576 bytes/],
    ];
    for (const [what, payload, refusal] of attempts) {
      const reply = await exchange(payload, socket);
      expect([what, reply]).toEqual([what, expect.stringMatching(/^\{"refused":\{"code":"TURNLOG_OWNER_CHANNEL"/)]);
      expect([what, (JSON.parse(reply) as { refused: { message: string } }).refused.message]).toEqual([what, expect.stringMatching(refusal)]);
    }
    expect(await streamLength()).toBe(before);
    expect(ran).toEqual([]);

    // The owner's own user, with the token, still answers through it; the owner records it.
    const recorded = await answerHeldCall({ dir }, sessionId, callId, { decision: "deny", by: "owner" });
    expect(recorded.event).toMatchObject({ type: "turn.approval.denied", data: { callId, by: "owner" } });
    expect(await streamLength()).toBe(before + 1);

    await runtime.close();
    await log.close();
    // Closed: the owner file and the socket's directory are gone, and the log verifies.
    await expect(stat(join(dir, "turnlog-owner.json"))).rejects.toMatchObject({ code: "ENOENT" });
    await expect(stat(dirname(socket))).rejects.toMatchObject({ code: "ENOENT" });
    const reader = await openLog({ dir });
    try {
      expect(await reader.verify()).toMatchObject({ ok: true });
    } finally {
      await reader.close();
    }
  });

  if (uid === 0) {
    it("a client of another uid (turnlog-ci) can read neither the token nor reach the socket, even with the token leaked: nothing appended", async () => {
      // The log directory itself is open to everyone here: what keeps the other user out is the channel's own files.
      await chmod(base, 0o755);
      await chmod(dir, 0o755);
      const { socket, token } = await ownerFile();
      const before = await streamLength();
      const probe = join(base, "probe.mjs");
      await writeFile(
        probe,
        `import { readFileSync } from "node:fs";
import net from "node:net";
const [ownerPath, socketPath, token, sessionId, callId] = process.argv.slice(2);
const result = {};
try { readFileSync(ownerPath, "utf8"); result.read = "read"; } catch (error) { result.read = error.code; }
result.connect = await new Promise((resolve) => {
  const socket = net.createConnection(socketPath);
  socket.on("connect", () => { socket.end(JSON.stringify({ token, sessionId, callId, answer: { decision: "approve", by: "mallory" } }) + "\\n"); });
  let reply = "";
  socket.on("data", (chunk) => (reply += chunk));
  socket.on("close", () => resolve(reply === "" ? "closed" : reply));
  socket.on("error", (error) => resolve(error.code));
});
process.stdout.write(JSON.stringify(result));
`,
      );
      await chmod(probe, 0o644);
      const asOther = (args: string[]) =>
        new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
          execFile("setpriv", ["--reuid=turnlog-ci", "--regid=turnlog-ci", "--clear-groups", "env", "-i", "PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/home/turnlog-ci", "USER=turnlog-ci", ...args], { cwd: base }, (error, stdout, stderr) =>
            resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : -1, stdout, stderr }),
          );
        });
      const probed = await asOther([process.execPath, probe, join(dir, "turnlog-owner.json"), socket, token, sessionId, callId]);
      expect(JSON.parse(probed.stdout)).toEqual({ read: "EACCES", connect: "EACCES" });

      // The CLI, run as that user, says so in one line and records nothing.
      const cli = await asOther([process.execPath, join(repoRoot, "bin", "turnlog.js"), "approve", sessionId, callId, "--dir", dir, "--by", "mallory"]);
      expect(cli.code).toBe(1);
      expect(cli.stderr).toMatch(/^turnlog: cannot read the owner file of the log at \S+: [^\n]*EACCES[^\n]*\n$/);
      expect(await streamLength()).toBe(before);
      expect(ran).toEqual([]);
    }, 120_000);
  } else {
    it("the channel's files are this user's alone: the owner file and the socket 0600, the socket's directory 0700", async () => {
      const { socket } = await ownerFile();
      const owner = await stat(join(dir, "turnlog-owner.json"));
      const socketDirectory = await stat(dirname(socket));
      const socketFile = await stat(socket);
      expect([owner.uid, owner.mode & 0o777]).toEqual([uid, 0o600]);
      expect([socketDirectory.uid, socketDirectory.mode & 0o777]).toEqual([uid, 0o700]);
      expect([socketFile.uid, socketFile.mode & 0o777, socketFile.isSocket()]).toEqual([uid, 0o600, true]);
    });
  }
});

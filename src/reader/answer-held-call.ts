import { setTimeout as delay } from "node:timers/promises";
import { readEvents } from "../core/read-events.js";
import { LogLockedError } from "../errors/log-locked-error.js";
import { OwnerChannelError } from "../errors/owner-channel-error.js";
import { SessionStateError } from "../errors/session-state-error.js";
import { UnknownSessionError } from "../errors/unknown-session-error.js";
import { askOwner, type OwnerReply } from "../log/level/owner-channel.js";
import { isPostgresLocation, type LogLocation } from "../log/log-location.js";
import type { SealOptions } from "../log/seal/stream-sealer.js";
import type { ToolDefinition } from "../tools/define-tool.js";
import { isRecord } from "../util/json-value.js";
import { checkAnswer, type HeldCallAnswer, type RecordedAnswer } from "./held-call-answer.js";
import { openLog } from "./open-log.js";

/** How {@link answerHeldCall} records an answer it records itself (a log nobody else holds). */
export interface AnswerHeldCallOptions {
  /** Seals the answer (the owner of a held LevelDB log seals with its own). */
  seals?: SealOptions;
  /** The host's tools: a `tool`-scope approval of a command tool needs its definition. */
  tools?: readonly ToolDefinition[];
}

/**
 * Answers a held call of any session on any log, from a process that has no tools and no provider
 * — what `turnlog approve` / `turnlog deny` and the view call (docs/embedding.md, "Which process
 * records what"):
 *
 * - a PostgreSQL log: opened, the answer appended (`LogReader.approve` / `deny`), closed;
 * - a LevelDB log another process holds: handed to that process through its owner channel, which
 *   records it with its own checked append (docs/log.md, "The owner channel");
 * - a LevelDB log nobody holds: opened (taking its lock), answered, closed.
 *
 * Resolves with the answer as recorded. A call that is not held throws `SessionStateError`, an
 * unknown session `UnknownSessionError` — from whichever process recorded it; an owner that takes
 * no answers, or cannot be reached, `OwnerChannelError`.
 *
 * @example
 * const { event } = await answerHeldCall({ dir: ".turnlog" }, "s1", "call-1", { decision: "approve", by: "ana" });
 */
export async function answerHeldCall(location: LogLocation, sessionId: string, callId: string, answer: HeldCallAnswer, options: AnswerHeldCallOptions = {}): Promise<RecordedAnswer> {
  checkAnswer(callId, answer);
  if (isPostgresLocation(location)) return answerInLog(location, sessionId, callId, answer, options);
  const request = { sessionId, callId, answer: answer as unknown as Record<string, unknown> };
  for (let attempt = 0; ; attempt += 1) {
    const reply = await askOwner(location.dir, request);
    if (reply !== undefined) return fromReply(reply, sessionId);
    try {
      return await answerInLog(location, sessionId, callId, answer, options);
    } catch (error) {
      if (!LogLockedError.isInstance(error) || error.inThisProcess) throw error;
      // Locked, and no channel answered: a process closing the log (its owner file goes first, the
      // lock last, after its last appends and an fsync), or one that started between the look and
      // the open (its channel comes up once it holds the lock). Either is over in moments: look
      // again a little later each time. LevelDB says nothing when a lock is given back, so this
      // waits by the clock; a process that keeps the log without a channel is named after ~3 s.
      const wait = lockWaitsMs[attempt];
      if (wait === undefined) {
        throw new OwnerChannelError(`the log at ${location.dir} is in use by another process, which takes no answers (it opened the log with answers: false, or without the owner channel) — answer once it is done`, { cause: error });
      }
      await delay(wait);
    }
  }
}

/** The waits between looks at a log that is locked and serves no channel (3.2 s in all). */
const lockWaitsMs = [25, 50, 100, 200, 400, 800, 1_600];

async function answerInLog(location: LogLocation, sessionId: string, callId: string, answer: HeldCallAnswer, options: AnswerHeldCallOptions): Promise<RecordedAnswer> {
  const reader = await openLog({ ...location, ...(options.seals !== undefined ? { seals: options.seals } : {}), ...(options.tools !== undefined ? { tools: options.tools } : {}) });
  try {
    return answer.decision === "approve" ? await reader.approve(sessionId, callId, answer) : await reader.deny(sessionId, callId, answer);
  } finally {
    await reader.close();
  }
}

/** The owner's reply as the caller's result, or its refusal thrown again as the error class it was. */
function fromReply(reply: OwnerReply, sessionId: string): RecordedAnswer {
  if ("refused" in reply) {
    const { code, message } = reply.refused;
    if (code === "TURNLOG_SESSION_STATE") throw new SessionStateError(message);
    if (code === "TURNLOG_UNKNOWN_SESSION") throw new UnknownSessionError(sessionId);
    throw new OwnerChannelError(code === "TURNLOG_OWNER_CHANNEL" ? message : `the process holding the log refused the answer: ${message} [${code}]`, { refusedCode: code });
  }
  const recorded = reply.recorded;
  if (!isRecord(recorded) || !Array.isArray(recorded.events) || typeof recorded.tool !== "string" || !Array.isArray(recorded.stillHeld)) {
    throw new OwnerChannelError("the process holding the log replied with something that is not a recorded answer");
  }
  const events = readEvents(recorded.events as never);
  const event = events.find((candidate) => candidate.type === "turn.approval.granted" || candidate.type === "turn.approval.denied");
  if (event === undefined) throw new OwnerChannelError("the process holding the log replied without the answer's event");
  return { sessionId, tool: recorded.tool, event: event as RecordedAnswer["event"], events, stillHeld: recorded.stillHeld as RecordedAnswer["stillHeld"] };
}

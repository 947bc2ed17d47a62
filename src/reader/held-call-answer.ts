import type { EventOf, TurnlogEvent } from "../contracts/events.js";
import type { EditOwner } from "../core/approval-edit.js";
import { appendedEvents, readEvents } from "../core/read-events.js";
import { decideCommand, type ApproveCall, type DenyCall } from "../core/session-decider.js";
import { SessionFold } from "../core/session-fold.js";
import { heldCalls, type PendingApproval } from "../core/held-calls.js";
import { sessionStream } from "../core/session-stream.js";
import { ExpectedVersionConflictError } from "../errors/expected-version-conflict-error.js";
import { LogCorruptedError } from "../errors/log-corrupted-error.js";
import { SessionStateError } from "../errors/session-state-error.js";
import { UnknownSessionError } from "../errors/unknown-session-error.js";
import type { EventLog, RecordedTurnlogEvent } from "../log/event-log.js";
import { systemClock } from "../log/event-recording.js";
import { earliestNextTime } from "../log/recorded-time.js";
import { findChangedEvent } from "../log/hash-chain.js";
import { answerChannelOf, type OwnerHandler } from "../log/level/owner-channel.js";
import { isAlwaysSealed } from "../log/seal/seal-record.js";
import type { StreamSealer } from "../log/seal/stream-sealer.js";
import { commandPrefix, commandScope } from "../policy/command-prefix.js";
import { createSecretRedactor, type SecretRedactor } from "../policy/secrets/secret-detector.js";
import { pendingApprovals } from "../projections/session-state.js";
import type { ToolDefinition } from "../tools/define-tool.js";
import type { ToolRegistry } from "../tools/tool-registry.js";
import { isRecord } from "../util/json-value.js";
import { wellFormedText } from "../util/well-formed-text.js";

/** A person's approval of a held call, as `LogReader.approve` takes it. */
export interface ApproveAnswer {
  /** Who answered (a user name, a reviewer ID). Logged redacted. */
  by: string;
  /** Logged redacted. */
  note?: string;
  /**
   * The fingerprint the person reviewed (`pendingApprovals(...)[i].decision.fingerprint`): when
   * given, the answer is refused if the held call is not that call.
   */
  fingerprint?: string;
  /**
   * `call` (default): this call only. `tool`: the tool for the rest of the session. For a command
   * tool that needs the command the held call runs, computed by the tool's own `command()`: the
   * reader (or runtime) must have the tool's definition, else the answer is refused.
   */
  scope?: "call" | "tool";
  /** Edited arguments: the call runs with these instead of the proposed ones (docs/policy.md). */
  arguments?: Record<string, unknown>;
}

/** A person's refusal of a held call, as `LogReader.deny` takes it. */
export interface DenyAnswer {
  by: string;
  note?: string;
  fingerprint?: string;
}

/** An answer to a held call, as it travels (the owner channel, the CLI): approve or deny. */
export type HeldCallAnswer = ({ decision: "approve" } & ApproveAnswer) | ({ decision: "deny" } & DenyAnswer);


/** What an answer recorded. */
export interface RecordedAnswer {
  sessionId: string;
  /** The held call's tool. */
  tool: string;
  /** The answer as the log holds it (`turn.approval.granted` or `turn.approval.denied`); its stream position is `event.meta.streamPosition`. */
  event: RecordedTurnlogEvent & (EventOf<"turn.approval.granted"> | EventOf<"turn.approval.denied">);
  /** Every event the answer appended, the answer among them. */
  events: RecordedTurnlogEvent[];
  /** The session's calls still held after this answer: answer them too before the turn goes on. */
  stillHeld: PendingApproval[];
}

/** How {@link recordAnswer} records: what the writer of the log redacts with, knows of the tools, and seals with. */
export interface AnswerRecording {
  /** Default: the built-in secret detector, with no known secrets. */
  redactor?: SecretRedactor;
  /** The host's tools: what a `tool`-scope approval of a command tool needs. */
  tools?: ToolRegistry;
  /** Announces and seals the answer, when the log is sealed (docs/embedding.md, "Sealing the log"). */
  sealer?: StreamSealer;
  /**
   * The process that runs the session, judging an edit of a held call of tool `toolName` with the
   * tool as it will run and the machine's real paths (`EditOwner`, docs/policy.md#edit-on-approval):
   * a runtime holding a LevelDB log answers its owner channel with it. Without it, an edit is judged
   * from the log alone.
   */
  editOwner?: (toolName: string) => EditOwner;
}

/**
 * How many answers in a row may lose their race to another writer before the conflict is thrown.
 * Each lost race means the session moved on; the next fold may show the call answered already.
 */
const maxConflicts = 16;

let defaultRedactor: SecretRedactor | undefined;

/**
 * Records a person's answer to a held call (docs/embedding.md, "Answering from anywhere"): a
 * checked append. It folds the session's stream, has the session decider decide the `approveCall`
 * or `denyCall` (it refuses, with `SessionStateError`, a call that is not held or whose
 * fingerprint differs), and appends exactly what it decided at the version folded. A lost race
 * folds again and decides again — the call may have been answered meanwhile, and is then refused.
 * Nothing else is written: no provider, no tool, no configuration, no recovery. The owner of the
 * session (its host's `autoResume` or `waitForAnswers`, a worker) continues the turn.
 *
 * @example
 * const { event } = await recordAnswer(log, "s1", "call-1", { decision: "approve", by: "ana" });
 * console.log(event.type, event.meta.streamPosition);
 */
export async function recordAnswer(log: EventLog, sessionId: string, callId: string, answer: HeldCallAnswer, recording: AnswerRecording = {}): Promise<RecordedAnswer> {
  checkAnswer(callId, answer);
  const redactor = recording.redactor ?? (defaultRedactor ??= createSecretRedactor());
  const logged = (text: string) => redactor.redactText(wellFormedText(text)).text;
  const stream = sessionStream(sessionId);
  for (let attempt = 1; ; attempt += 1) {
    const recorded = await log.readStream(stream, { maxCount: Number.MAX_SAFE_INTEGER });
    if (recorded.length === 0) throw new UnknownSessionError(sessionId);
    const fault = findChangedEvent(recorded);
    if (fault !== undefined) throw new LogCorruptedError(`session "${sessionId}": event ${fault.position}: ${fault.reason} — the log is damaged; run verify()`);
    const fold = new SessionFold();
    fold.applyAll(readEvents(recorded));
    const version = recorded.length;
    const answered = { callId, by: logged(answer.by), ...(answer.note !== undefined ? { note: logged(answer.note) } : {}), ...(answer.fingerprint !== undefined ? { fingerprint: answer.fingerprint } : {}) };
    let command: ApproveCall | DenyCall;
    if (answer.decision === "approve") {
      // Passed through under its own name; the decider re-gates edited arguments (docs/policy.md).
      const heldTool = fold.state.calls.get(callId)?.name;
      const owner = answer.arguments !== undefined && heldTool !== undefined ? recording.editOwner?.(heldTool) : undefined;
      const edited = answer.arguments !== undefined ? { arguments: answer.arguments, ...(owner !== undefined ? { owner } : {}) } : {};
      const scope = answer.scope ?? "call";
      command = { type: "approveCall", ...answered, scope, ...(scope === "tool" ? approvedCommand(fold.state, callId, answer, recording.tools, redactor) : {}), ...edited };
    } else {
      command = { type: "denyCall", ...answered };
    }
    // Decided on the time the append will carry, as the runtime decides an answer: an answer at or
    // after the call's approval deadline is refused (docs/policy.md#approval-deadlines). The log never
    // records a time before the stream's last one, so neither is this.
    const recordedAt = earliestNextTime(log.clock ?? systemClock, fold.state.lastRecordedAt);
    const events: TurnlogEvent[] = decideCommand({ ...command, recordedAt }, fold);
    try {
      // Announced first, as a sealing runtime announces an answer: after a crash the log never holds it unsealed (docs/log.md, "Always-sealed events").
      if (recording.sealer !== undefined && events.some((event) => isAlwaysSealed(event.type))) await recording.sealer.announce(stream, version, events);
      const appended = await log.appendToStream(stream, events, { expectedStreamVersion: version, recordedAt });
      const written = appendedEvents(events, appended.events);
      await recording.sealer?.seal(stream);
      const event = written.find((candidate) => candidate.type === "turn.approval.granted" || candidate.type === "turn.approval.denied");
      if (event === undefined) throw new TypeError(`the session decider answered call ${callId} without an approval event`);
      const tool = fold.state.calls.get(callId)?.name ?? "";
      fold.applyAll(written);
      return { sessionId, tool, event: event as RecordedAnswer["event"], events: written, stillHeld: heldCalls(fold.state) };
    } catch (error) {
      if (!ExpectedVersionConflictError.isInstance(error) || attempt >= maxConflicts) throw error;
    }
  }
}

/**
 * The handler a log's owner records channel answers with: `recordAnswer` over its log, with its
 * redaction, tools and sealer. Registered on a LevelDB log by `createRuntime` and `openLog`;
 * does nothing on a log with no owner channel. Returns the function that stops it.
 */
export function serveAnswers(log: EventLog, recording: AnswerRecording = {}, track?: (work: Promise<unknown>) => void): () => void {
  const channel = answerChannelOf(log);
  if (channel === undefined) return () => undefined;
  const handler: OwnerHandler = (request) => {
    const work = recordAnswer(log, request.sessionId, request.callId, request.answer as unknown as HeldCallAnswer, recording);
    track?.(work);
    return work;
  };
  return channel.serveAnswers(handler);
}

/** The calls a session holds for a person, as `RecordedAnswer.stillHeld` lists them. */
/** A caller's mistake in an answer is a `TypeError`, before anything is read (or sent to a log's owner). */
export function checkAnswer(callId: string, answer: HeldCallAnswer): void {
  if (typeof callId !== "string" || callId === "") throw new TypeError("an answer needs the held call's ID");
  if (!isRecord(answer)) throw new TypeError("an answer is an object: { by, note?, fingerprint? }");
  if (answer.decision !== "approve" && answer.decision !== "deny") throw new TypeError('an answer\'s decision is "approve" or "deny"');
  if (typeof answer.by !== "string" || answer.by.trim() === "") throw new TypeError("an approval answer needs `by`: who answered");
  if (answer.note !== undefined && typeof answer.note !== "string") throw new TypeError("an approval answer's `note` is a string");
  if (answer.fingerprint !== undefined && typeof answer.fingerprint !== "string") throw new TypeError("an approval answer's `fingerprint` is a string");
  if (answer.decision === "approve") {
    if (answer.scope !== undefined && answer.scope !== "call" && answer.scope !== "tool") throw new TypeError('an approval scope is "call" or "tool"');
    if (answer.arguments !== undefined && !isRecord(answer.arguments)) throw new TypeError("edited `arguments` are a JSON object");
  }
}

/**
 * What a `tool`-scope approval of a command tool covers: the command prefix and exact scope of the
 * command the call runs (the runtime's `session.approve` computes the same). The command text comes
 * from the tool's own `command()`, host code the log does not hold: without the tool's definition
 * the answer is refused rather than recorded covering nothing or the wrong command. Nothing for a
 * tool the session recorded as no command tool.
 */
function approvedCommand(
  state: SessionFold["state"],
  callId: string,
  answer: ApproveAnswer,
  tools: ToolRegistry | undefined,
  redactor: SecretRedactor,
): { commandPrefix?: string; commandScope?: string } {
  const call = pendingApprovals(state).find((candidate) => candidate.callId === callId);
  // Not held: the decider refuses it.
  if (call === undefined) return {};
  const snapshot = state.tools.find((tool) => tool.name === call.name);
  const definition = tools?.get(call.name);
  if (snapshot?.flags.command !== true && definition?.command === undefined) return {};
  if (definition?.command === undefined) {
    throw new SessionStateError(`call ${callId} runs a command of tool ${call.name}: approving the tool for the rest of the session needs the tool's definition (open the log with { tools }), or approve this call only (scope "call")`);
  }
  return approvedCommandOf(definition, answer.arguments ?? call.input, redactor);
}

/**
 * What an "always" approval of a command tool's call with `input` covers, as it may be logged:
 * the command's prefix and its exact scope (docs/policy.md), computed by the tool's own
 * `command()`, redacted (a prefix with a secret in it matches no command, so later calls ask
 * again). Nothing for a tool that runs no command, or whose `command()` throws on the input.
 */
export function approvedCommandOf(tool: ToolDefinition | undefined, input: unknown, redactor: SecretRedactor): { commandPrefix?: string; commandScope?: string } {
  if (tool?.command === undefined) return {};
  let text: string;
  try {
    text = tool.command(input as never);
  } catch {
    return {};
  }
  const prefix = commandPrefix(text);
  const scope = commandScope(text);
  return {
    ...(prefix !== undefined ? { commandPrefix: redactor.redactText(prefix).text } : {}),
    ...(scope !== undefined ? { commandScope: redactor.redactText(scope).text } : {}),
  };
}

import type { ProviderFormat } from "../contracts/provider.js";
import { SessionStateError } from "../errors/session-state-error.js";
import { ExpectedVersionConflictError } from "../errors/expected-version-conflict-error.js";
import type { DiagnosticRecord } from "../history/session-history.js";
import { sessionHistory } from "../providers/format-history.js";
import { activeTurn, pendingApprovals, type SessionState } from "../projections/session-state.js";
import { inProgressElsewhere, outcomeOf, ProviderTurnLoop, type LoopDependencies, type SendOutcome } from "./provider-turn-loop.js";
import { turnInProgressElsewhere } from "./turn-elsewhere.js";
import type { SessionStore } from "./session-store.js";
import { HostToolExecutor, type HostToolOptions, type HostToolResult } from "./host-tool-executor.js";
import { approvedCommandOf } from "../reader/held-call-answer.js";
import type { ToolDefinition } from "../tools/define-tool.js";
import type { SecretRedactor } from "../policy/secrets/secret-detector.js";
import type { StreamSealer } from "../log/seal/stream-sealer.js";
import { sessionStream } from "../core/session-stream.js";
import { followSession, type FollowSessionOptions } from "../reader/follow-session.js";
import type { EventLog, RecordedTurnlogEvent, SessionLeases } from "../log/event-log.js";
import { SessionBusyError } from "../errors/session-busy-error.js";
import { recover, type RecoveryDependencies } from "./session-recovery.js";
import { linkSignals } from "../util/linked-signal.js";
import { wellFormedText } from "../util/well-formed-text.js";
import { decideCommand, type ApproveCall, type DenyCall } from "../core/session-decider.js";
import type { EditOwner } from "../core/approval-edit.js";
import { isRecord } from "../util/json-value.js";
import { readGitLinks } from "../util/git-links.js";
import { resolveRealPath } from "../util/real-path.js";

/** How the runtime releases an idle session's in-memory state (`Session[releaseSession]`); not exported from turnlog. */
export const releaseSession = Symbol("turnlog.releaseSession");
import { approvalDeadlines, expiredApprovals } from "../core/approval-deadlines.js";
import { systemClock } from "../log/event-recording.js";
import { earliestNextTime } from "../log/recorded-time.js";
import { setTimeout as sleep } from "node:timers/promises";

/** Options of `session.waitForAnswers`. */
export interface WaitForAnswersOptions {
  /** Stops waiting: the promise rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** How a runtime's sessions share their log with other hosts (built by `createRuntime`). */
export interface SessionHosting {
  /** Leases each driving operation takes (`sessionLease: "fail"`); none: operations race. */
  leases?: SessionLeases;
  /** What a `resume` under the lease recovers a crashed holder's turn with. */
  recovery?: RecoveryDependencies;
  /** `RuntimeOptions.autoResume`: a session this runtime parked resumes once answered elsewhere. */
  autoResume?: {
    onOutcome?: (outcome: SendOutcome, session: Session) => void;
    onError?: (error: unknown, session: Session) => void;
  };
  /**
   * Aborted (with a `RuntimeClosedError`) when the runtime closes: waits end, turns under way are
   * cancelled, and operations asked for afterwards are refused.
   */
  closing?: AbortSignal;
  /** Registers an operation under way (or an auto-resume), so that `runtime.close()` lets it end first. */
  track?: (work: Promise<unknown>) => void;
  /**
   * What a new runtime does when it opens the session (create-runtime.ts): checks it can continue
   * it and recovers a turn left in flight. Run again before the next operation after one whose
   * append failed, so a call whose outcome was not written is treated as a new runtime treats it.
   */
  reopen?: (store: SessionStore) => Promise<void>;
  /**
   * `RuntimeOptions.maxOpenSessions`: told when an operation of the session starts (the runtime
   * keeps its sessions in least-recently-used order and releases idle ones beyond the bound), and
   * how a released session loads its store again — from the log, as opening it would.
   */
  residency?: {
    used(session: Session): void;
    load(sessionId: string): Promise<SessionStore>;
  };
}

export interface ApprovalAnswer {
  /** Who answered (a user name, a reviewer ID). */
  by: string;
  note?: string;
  /**
   * The fingerprint the person reviewed (from `pendingApprovals`). When given, the answer is
   * refused if the held call's fingerprint differs: an approval never covers a changed call.
   */
  fingerprint?: string;
  /**
   * `call` (default): this call only. `tool`: also this tool for the rest of the session — later
   * calls that the mode would ask about run without asking (hard blocks, deny rules, commands that
   * need approval and the always-ask classes still apply). Only an approval can have this scope.
   */
  scope?: "call" | "tool";
  /**
   * Decisions version 7 on: the arguments to run the call with instead of the model's (a JSON
   * object), for an approval only (docs/policy.md#edit-on-approval). They must match the tool's
   * recorded input schema, and the gate decides again on them: an edit it would deny or block is
   * refused (`SessionStateError` naming the rule) and nothing is recorded. The call runs with them,
   * and the history and the audit show them. With `scope: "tool"` it is refused.
   */
  arguments?: Record<string, unknown>;
}

/** What {@link continueLeftWork} found and did: `continued` when it ran the session's owed work. */
export interface LeftWork {
  continued: boolean;
  outcome: SendOutcome;
}

/** Reaches a session's private `#continueLeft` from the runtime's worker (set by the class below). */
let continueLeftOf: (session: Session, signal: AbortSignal | undefined) => Promise<LeftWork>;
/** Reaches a session's private `#watchForAnswers` (set by the class below). */
let watchForAnswersOf: (session: Session) => void;

/**
 * `runtime.resumeAll`'s step for one session (src/runtime/resume-all.ts): under the session's lease
 * when the runtime takes leases, reloads it, recovers what a crashed holder left, and continues it
 * only if the log then says work is owed and nobody else is performing it (`needs-resume` with
 * answers in, or a turn a crash cut off). Otherwise nothing is run or appended and the session's
 * standing outcome comes back with `continued: false`. Throws `SessionBusyError` while another
 * process holds the lease. Not part of the public surface: a host calls `runtime.resumeAll()`.
 */
export function continueLeftWork(session: Session, signal?: AbortSignal): Promise<LeftWork> {
  return continueLeftOf(session, signal);
}

/**
 * `autoResume` for a session this runtime did not park itself (`runtime.resumeAll` found it
 * parked): the session waits for its answers and resumes, exactly as after a `send` of its own.
 */
export function watchForAnswers(session: Session): void {
  watchForAnswersOf(session);
}

/**
 * One conversation: `send` a user message and get the outcome of the tool loop; answer held calls
 * with `approve` / `deny` and continue with `resume`. Operations on one session run one at a time.
 */
export class Session {
  readonly #id: string;
  /** The log the session is recorded in: what `events()` follows, released or not. */
  readonly #log: EventLog;
  /** The session's events and their fold; `undefined` once the runtime released it (`releaseSession`). */
  #store: SessionStore | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  /** Operations queued or running: while there are any, this process is the one writing. */
  #busy = 0;
  /** An auto-resume waits for this session's answers. */
  #watching = false;
  /** `waitForAnswers` calls under way: they follow the log and then read the state again. */
  #waiting = 0;
  /**
   * An operation's append failed (the log refused an event, or its storage failed): what it left
   * in flight — a started call whose outcome was not written, a provider request without its
   * answer — is recovered, as a new runtime would, before the next operation.
   */
  #reopenOwed = false;

  static {
    continueLeftOf = (session, signal) => session.#continueLeft(signal);
    watchForAnswersOf = (session) => session.#watchForAnswers();
  }

  constructor(
    store: SessionStore,
    private readonly deps: LoopDependencies,
    /** Seals the session's stream after each operation (a turn end, an answer), when the runtime seals. */
    private readonly sealer?: StreamSealer,
    private readonly hosting: SessionHosting = {},
  ) {
    this.#id = store.sessionId;
    this.#store = store;
    this.#log = store.log;
  }

  get id(): string {
    return this.#id;
  }

  /**
   * The session's store. Operations reach it through `#exclusive`, which loads a released session
   * first; the synchronous reads of a released one (`state()`, `outcome()`, `history()`) are
   * refused, since loading it means reading the log.
   */
  private get store(): SessionStore {
    if (this.#store === undefined) {
      throw new SessionStateError(`session ${this.#id} was released from memory (maxOpenSessions): \`await session.refresh()\` (or any operation) loads it again from the log`);
    }
    return this.#store;
  }

  /**
   * Whether the runtime may release this session's in-memory state (`RuntimeOptions.maxOpenSessions`):
   * no operation queued or running, no `waitForAnswers` or auto-resume waiting on it, and no
   * secret arguments of a held call that live only in this process's memory (docs/policy.md#secrets).
   */
  #idle(): boolean {
    return this.#store !== undefined && this.#busy === 0 && this.#waiting === 0 && !this.#watching && this.deps.vault.empty;
  }

  /**
   * For the runtime only (`maxOpenSessions`): lets go of the session's in-memory state when it is
   * idle, and says whether it did. The log holds everything: the next operation loads the session
   * again, as opening it would.
   */
  [releaseSession](): boolean {
    if (!this.#idle()) return false;
    this.#store = undefined;
    return true;
  }

  /**
   * Whether the session's state is in memory now: false once the runtime released it
   * (`RuntimeOptions.maxOpenSessions`) until its next operation or `refresh()` — meanwhile
   * `state()`, `outcome()` and `history()` throw `SessionStateError`.
   */
  get loaded(): boolean {
    return this.#store !== undefined;
  }

  /**
   * Adds a user message and runs the tool loop until it completes, stops, fails or waits for
   * approval. A message that loses a race to another writer is not sent: the send fails with
   * `ExpectedVersionConflictError` (the session reloads), since the user wrote it without seeing
   * what the other writer appended. Races lost later in the turn are carried on (`resume`).
   * On a log that grants leases, throws `SessionBusyError` while another process drives the session;
   * without the lease, when another writer is in the middle of the session's turn (`holder: "writer"`).
   */
  send(text: string, options: { signal?: AbortSignal } = {}): Promise<SendOutcome> {
    if (typeof text !== "string") return Promise.reject(new TypeError(`send takes the user's message as a string, got ${typeof text}`));
    return this.#driving(async (leased) => {
      await this.#betweenTurns(leased, `session ${this.id} has an unfinished turn: answer its approvals and resume() it first`);
      // What the user typed is logged like everything else: a key pasted into a message is redacted.
      // Made valid Unicode first (docs/log.md, "Event data"): half an emoji is no reason to lose the message.
      await this.store.append(decideCommand({ type: "sendMessage", content: this.deps.redactor.redactText(wellFormedText(text)).text }, this.store.fold));
      return this.#run(leased, options.signal);
    });
  }

  /** Approves a held call; `resume()` then runs it. */
  approve(callId: string, answer: ApprovalAnswer): Promise<void> {
    return this.#answer(callId, answer, true);
  }

  /** Denies a held call; the model is told it was not executed. */
  deny(callId: string, answer: ApprovalAnswer): Promise<void> {
    return this.#answer(callId, answer, false);
  }

  /**
   * Continues an unfinished turn; with nothing unfinished, returns the last outcome unchanged. It
   * starts from the log as it is now (what other hosts appended included) and derives its next
   * step from it. Under the session's lease (`sessionLease: "fail"`), a turn the lease's last
   * holder left unfinished is first recovered as after a crash (that holder is gone: its lease
   * ended with its connection). On a shared log, a turn another host is performing is left to
   * it: the outcome is `needs-resume` / `in-progress-elsewhere` (docs/embedding.md, "Many hosts,
   * one log"). Throws `SessionBusyError` while another process holds the lease.
   */
  resume(options: { signal?: AbortSignal } = {}): Promise<SendOutcome> {
    return this.#driving(async (leased) => {
      await this.#reload();
      if (leased && this.hosting.recovery !== undefined) await recover(this.store, this.hosting.recovery);
      return this.#run(leased, options.signal);
    });
  }

  /** See {@link continueLeftWork}. */
  #continueLeft(signal: AbortSignal | undefined): Promise<LeftWork> {
    return this.#exclusive(() =>
      this.#leased(async (leased): Promise<LeftWork> => {
        await this.#reload();
        if (leased && this.hosting.recovery !== undefined) await recover(this.store, this.hosting.recovery);
        // Confirmed on the session's own fold, under the lease: another worker may have finished
        // it, or a person may still owe an answer, since the sweep listed it. Holding the lease,
        // this process knows nobody else drives the turn, whoever appended its latest events.
        const standing = leased ? outcomeOf(this.store.state) : this.outcome();
        // A held call past its approval deadline owes its denial (approval:timeout): the run records it and goes on.
        const expired = standing.status === "awaiting-approval" && pastDeadline(this.store.log, this.store.state);
        if ((standing.status !== "needs-resume" && !expired) || standing.reason === inProgressElsewhere) return { continued: false, outcome: standing };
        return { continued: true, outcome: await this.#run(leased, signal) };
      }),
    ).then((left) => {
      if (left.outcome.status === "awaiting-approval") this.#watchForAnswers();
      return left;
    });
  }

  /**
   * Resolves once every call the session is parked on has an answer in the log — given here or
   * by any other process on the same log (a reviewer's `approve` / `deny`, `turnlog approve`).
   * It follows the session's stream (`session.events()`; on PostgreSQL it wakes on NOTIFY), then
   * reloads and resolves with `session.outcome()`: `needs-resume` when the turn is ready to
   * continue with `resume()`. With nothing held it resolves at once. A held call with a deadline
   * (decisions version 7, `policy.approvalTimeoutMs`) ends the wait at that deadline, by the log's
   * clock: the wait then records the call's denial (rule `approval:timeout`) and resolves
   * `needs-resume`. Rejects with the signal's
   * reason when `signal` aborts, and with `RuntimeClosedError` when the runtime closes.
   *
   * @example
   * const parked = await session.send("deploy it");
   * if (parked.status === "awaiting-approval") {
   *   await session.waitForAnswers({ signal });   // a reviewer answers from another process
   *   const outcome = await session.resume();
   * }
   */
  async waitForAnswers(options: WaitForAnswersOptions = {}): Promise<SendOutcome> {
    options.signal?.throwIfAborted();
    this.hosting.closing?.throwIfAborted();
    this.#waiting += 1;
    try {
      return await this.#waitForAnswers(options);
    } finally {
      this.#waiting -= 1;
    }
  }

  async #waitForAnswers(options: WaitForAnswersOptions): Promise<SendOutcome> {
    await this.refresh();
    const held = new Set(pendingApprovals(this.store.state).map((call) => call.callId));
    if (held.size === 0) return this.outcome();
    const turnId = activeTurn(this.store.state)?.turnId;
    // Decisions version 7: the wait ends at the first held call's deadline too (approval:timeout).
    const deadline = approvalDeadlines(this.store.state)[0]?.deadline;
    const deadlinePassed = new AbortController();
    // Ends with the host's signal or the runtime's close, whichever comes first, and rejects with its reason.
    const linked = linkSignals([options.signal, this.hosting.closing, deadlinePassed.signal]);
    const timer = deadline !== undefined ? this.#untilDeadline(deadline, linked.signal).then(() => deadlinePassed.abort()) : undefined;
    try {
      for await (const event of this.events({ after: this.store.version, signal: linked.signal })) {
        if (event.type === "turn.approval.granted" || event.type === "turn.approval.denied") held.delete(event.data.callId);
        // The turn ended otherwise (another host stopped it): nothing is left to wait for.
        const ended = (event.type === "turn.stopped" || event.type === "turn.failed" || event.type === "turn.completed") && event.data.turnId === turnId;
        if (held.size === 0 || ended) break;
      }
      options.signal?.throwIfAborted();
      this.hosting.closing?.throwIfAborted();
    } finally {
      // The deadline's wait ends with the wait for answers, whichever ended it.
      if (!deadlinePassed.signal.aborted) deadlinePassed.abort();
      linked.dispose();
      await timer;
    }
    await this.refresh();
    // The deadline passed with calls still held: this wait records their denial, as resume() would.
    if (deadline !== undefined && pendingApprovals(this.store.state).length > 0) {
      // Lost to another writer (an answer, another host's denial): the log, reloaded, tells the outcome.
      await this.#expireApprovals().catch((error: unknown) => {
        if (!ExpectedVersionConflictError.isInstance(error)) throw error;
      });
    }
    return this.outcome();
  }

  /**
   * Resolves once the log's clock reaches `deadline` (ms), waiting with the runtime's clock
   * (`clock.sleep` when it has one, so a test moves time without waiting), or when `signal` aborts.
   */
  async #untilDeadline(deadline: number, signal: AbortSignal): Promise<void> {
    const recordedClock = this.store.log.clock ?? systemClock;
    const { clock } = this.deps;
    try {
      for (let left = deadline - recordedClock.now(); left > 0 && !signal.aborted; left = deadline - recordedClock.now()) {
        await (clock.sleep !== undefined ? clock.sleep(left, signal) : sleep(left, undefined, { signal }));
      }
    } catch (error) {
      // Aborted: the wait ended otherwise.
      if (!signal.aborted) throw error;
    }
  }

  /**
   * Denies, with rule `approval:timeout`, the held calls whose deadline has passed at the time
   * the append carries (the session decider's `expireApprovals`); nothing when none has. Like an
   * answer, it needs no lease: the session's next `resume()` continues the turn.
   */
  #expireApprovals(): Promise<unknown> {
    return this.#exclusive(() => this.store.appendWith(() => decideCommand({ type: "expireApprovals", recordedAt: this.store.recordedTime() }, this.store.fold)));
  }

  /**
   * Runs a named tool for the host directly (a deterministic intent, not a model's call): it is
   * planned and gated like any call and logged as `session.native_tool.*`, but never joins a
   * provider tool group or the native history. Only between turns.
   *
   * @example
   * const result = await session.runTool("read_file", { path: "README.md" }, { by: "ui:open-button" });
   */
  runTool(tool: string, input: unknown, options: HostToolOptions): Promise<HostToolResult> {
    return this.#exclusive(() =>
      this.#leased(async (leased) => {
        await this.#betweenTurns(leased, `session ${this.id} has an unfinished turn: a host-routed call runs between turns`);
        // The runtime's close aborts the call as its own signal would.
        const linked = linkSignals([options?.signal, this.hosting.closing]);
        try {
          return await new HostToolExecutor(this.store, this.deps).run(tool, input, { ...options, signal: linked.signal });
        } finally {
          linked.dispose();
        }
      }),
    );
  }

  /**
   * The session's events, typed: first those recorded after stream position `after` (default 0:
   * all of them), then each one as it is appended — by this process or, through the same log
   * object, by anyone — with no gap and no duplicate. Ends when `signal` aborts or the loop is
   * left (`break`), and when the runtime closes (`runtime.close()`: the loop simply ends), and
   * then stops listening.
   *
   * @example
   * for await (const event of session.events({ after: shownUpTo, signal })) {
   *   if (event.type === "turn.completed") render(event.data.text);
   *   shownUpTo = event.meta.streamPosition;
   * }
   */
  events(options: FollowSessionOptions = {}): AsyncIterableIterator<RecordedTurnlogEvent> {
    const linked = linkSignals([options.signal, this.hosting.closing]);
    let events: AsyncIterableIterator<RecordedTurnlogEvent>;
    try {
      events = followSession(this.#log, this.id, { ...options, signal: linked.signal });
    } catch (error) {
      linked.dispose();
      throw error;
    }
    // Unlinked from the runtime's close as soon as the iteration ends, whoever ends it.
    const follower: AsyncIterableIterator<RecordedTurnlogEvent> = {
      [Symbol.asyncIterator]: () => follower,
      async next() {
        try {
          const result = await events.next();
          if (result.done === true) linked.dispose();
          return result;
        } catch (error) {
          linked.dispose();
          throw error;
        }
      },
      async return() {
        linked.dispose();
        await events.return?.();
        return { done: true, value: undefined };
      },
    };
    return follower;
  }

  /** The session-state projection (frozen). */
  state(): SessionState {
    return this.store.state;
  }

  /**
   * The outcome as it stands, without running anything: `idle` before the first message,
   * `needs-resume` when the session owes work (answered approvals, a turn recovered after a
   * crash), otherwise how the last `send` / `resume` ended (docs/embedding.md, "Outcomes").
   */
  outcome(): SendOutcome {
    const outcome = outcomeOf(this.store.state);
    // A turn another writer is in the middle of is not this session's to resume after a crash.
    if (outcome.reason === "unfinished-turn" && turnInProgressElsewhere(this.store)) return { ...outcome, reason: inProgressElsewhere };
    return outcome;
  }

  #owesWork(): boolean {
    return activeTurn(this.store.state) !== undefined || this.store.fold.pending.length > 0;
  }

  /**
   * Refuses work that needs the session between turns (a `send`, a host-routed call) while a turn
   * is owed: with `refusal` when it is this session's to finish, with `SessionBusyError` when
   * another writer is in the middle of it. Owed as far as this process last read: another writer
   * (the winner of a race this session lost) may have finished the turn since, so the log decides.
   */
  async #betweenTurns(leased: boolean, refusal: string): Promise<void> {
    if (this.#owesWork() && (await this.store.isBehind())) await this.#reload();
    if (!this.#owesWork()) return;
    if (!leased && turnInProgressElsewhere(this.store)) throw new SessionBusyError(this.id, "writer");
    throw new SessionStateError(refusal);
  }

  /**
   * Reloads the session from the log when another writer (another runtime on the same log)
   * appended to it since, so `state()` and `outcome()` tell the log's truth. `openSession` does
   * this for a session it had open, `resume()` does it before it starts, and an operation that
   * loses a race folds what the other writer appended (carrying on from it, or — a `send`'s user
   * message — failing with the conflict). While an operation of this session runs, nothing is
   * reloaded here: the operation is then the writer and reloads itself when it loses a race.
   */
  async refresh(): Promise<void> {
    if (this.#busy > 0) return;
    await this.#exclusive(async () => {
      if (await this.store.isBehind()) await this.#reload();
    }, { seal: false });
  }

  /**
   * The provider-native message history, rebuilt from the log: what the next request to a
   * provider of that format would carry (docs/design.md#9-history). Nothing is logged; a compaction it would
   * need is applied to the result only.
   *
   * @example
   * const { messages, diagnostics } = session.history({ format: "anthropic-messages", maxTokens: 8000 });
   */
  history(options: { format: ProviderFormat; maxTokens?: number }): { messages: unknown[]; system?: string; diagnostics: DiagnosticRecord[] } {
    return sessionHistory(this.store.state, options, this.deps.compressor);
  }

  #answer(callId: string, answer: ApprovalAnswer, granted: boolean): Promise<void> {
    return this.#exclusive(async () => {
      if (typeof answer?.by !== "string" || answer.by === "") throw new TypeError("an approval answer needs `by`: who answered");
      if (answer.note !== undefined && typeof answer.note !== "string") throw new TypeError("an approval answer's `note` is a string");
      if (answer.scope !== undefined && answer.scope !== "call" && answer.scope !== "tool") throw new TypeError('an approval scope is "call" or "tool"');
      if (answer.arguments !== undefined && !isRecord(answer.arguments)) throw new TypeError("an approval's `arguments` are a JSON object");
      if (answer.arguments !== undefined && !granted) throw new TypeError("only an approval carries `arguments`: a denied call does not run");
      const { redactor } = this.deps;
      const logged = (text: string) => redactor.redactText(wellFormedText(text)).text;
      const answered = { callId, by: logged(answer.by), ...(answer.note !== undefined ? { note: logged(answer.note) } : {}), ...(answer.fingerprint !== undefined ? { fingerprint: answer.fingerprint } : {}) };
      const command: ApproveCall | DenyCall = granted
        ? {
            type: "approveCall",
            ...answered,
            scope: answer.scope ?? "call",
            ...(answer.scope === "tool" ? this.#approvedCommand(callId) : {}),
            ...(answer.arguments !== undefined ? { arguments: answer.arguments, owner: this.#editOwner(callId) } : {}),
          }
        : { type: "denyCall", ...answered };
      // Decided on the time the append will carry: an answer past the call's deadline is refused.
      await this.store.appendWith(() => decideCommand({ ...command, recordedAt: this.store.recordedTime() }, this.store.fold));
    });
  }

  /**
   * This process runs the session: the gate judges an edit of the held call `callId` with the tool
   * as it will run, and observes real paths and git entries the log has not recorded yet (recorded
   * ahead of the approval).
   */
  #editOwner(callId: string): EditOwner {
    const call = pendingApprovals(this.store.state).find((candidate) => candidate.callId === callId);
    return runningEditOwner(call === undefined ? undefined : this.deps.registry.get(call.name), this.deps.gate?.realPath ?? resolveRealPath, this.deps.redactor);
  }

  /**
   * What an "always" approval of the held call `callId` covers, as it may be logged: a prefix with
   * a secret in it becomes one that matches no command, so later calls ask again. Nothing when no
   * such call is held (the decider then refuses the answer).
   */
  #approvedCommand(callId: string): { commandPrefix?: string; commandScope?: string } {
    const call = pendingApprovals(this.store.state).find((candidate) => candidate.callId === callId);
    return call === undefined ? {} : approvedCommandOf(this.deps.registry.get(call.name), call.input, this.deps.redactor);
  }

  /**
   * A `send` or `resume`: one at a time, under the session's lease when the runtime takes one, and
   * with an auto-resume armed when it ends parked for approval (`autoResume`).
   */
  #driving(work: (leased: boolean) => Promise<SendOutcome>): Promise<SendOutcome> {
    return this.#exclusive(() => this.#leased(work)).then((outcome) => {
      if (outcome.status === "awaiting-approval") this.#watchForAnswers();
      return outcome;
    });
  }

  /**
   * Runs `work` holding the session's lease, when the runtime takes leases; another holder makes
   * it a `SessionBusyError`, before anything is appended.
   */
  async #leased<T>(work: (leased: boolean) => Promise<T>): Promise<T> {
    const leases = this.hosting.leases;
    if (leases === undefined) return work(false);
    const lease = await leases.tryLease(sessionStream(this.id));
    if (lease === undefined) throw new SessionBusyError(this.id);
    try {
      return await work(true);
    } finally {
      await lease.release();
    }
  }

  /**
   * `autoResume`: waits (without a lease, so any process may answer) for the answers to the
   * calls this session is parked on, then resumes it and tells the host the outcome. A resume
   * that parks again arms the next wait. Stops when the runtime closes.
   */
  #watchForAnswers(): void {
    const auto = this.hosting.autoResume;
    const closing = this.hosting.closing;
    if (auto === undefined || this.#watching || closing?.aborted === true) return;
    this.#watching = true;
    const watched = (async () => {
      let outcome: SendOutcome;
      try {
        await this.waitForAnswers(closing !== undefined ? { signal: closing } : {});
        this.#watching = false;
        outcome = await this.resume();
      } catch (error) {
        this.#watching = false;
        if (closing?.aborted !== true) auto.onError?.(error, this);
        return;
      }
      auto.onOutcome?.(outcome, this);
    })();
    this.hosting.track?.(watched);
  }

  /** Runs the turn loop of a `send` or `resume`: the runtime's close cancels it as `signal` would. */
  async #run(leased: boolean, signal: AbortSignal | undefined): Promise<SendOutcome> {
    const linked = linkSignals([signal, this.hosting.closing]);
    try {
      return await this.#loop(leased).run(linked.signal);
    } finally {
      linked.dispose();
    }
  }

  /**
   * The turn loop of one operation. Under the lease, a loop whose appends the log lost (a server
   * crash) recovers what it left in flight as after a crash of its own (ProviderTurnLoop).
   */
  #loop(leased: boolean): ProviderTurnLoop {
    const recovery = this.hosting.recovery;
    if (!leased || recovery === undefined) return new ProviderTurnLoop(this.store, this.deps);
    return new ProviderTurnLoop(this.store, this.deps, () => recover(this.store, { ...recovery, lostAppends: true }));
  }

  async #seal(): Promise<void> {
    await this.sealer?.seal(sessionStream(this.id));
  }

  /**
   * Runs `work` after every earlier operation, then seals the stream at its new version: a turn's
   * end, an answer, a host-routed call. A failed operation is sealed too (what it appended is
   * recorded all the same), and its own error is the one the caller gets.
   */
  #exclusive<T>(work: () => Promise<T>, options: { seal?: boolean } = {}): Promise<T> {
    const seal = options.seal !== false;
    this.#busy += 1;
    this.hosting.residency?.used(this);
    const result = this.#queue.then(async () => {
      // Queued before the runtime closed, starting after: refused, nothing appended.
      this.hosting.closing?.throwIfAborted();
      await this.#restore();
      let value: T;
      const failedAppends = this.store.failedAppends;
      try {
        if (this.#reopenOwed && seal) {
          await this.#reload();
          await this.hosting.reopen?.(this.store);
          this.#reopenOwed = false;
        }
        value = await work();
      } catch (error) {
        // Another writer appended: what this session holds is stale. The operation still fails
        // with the conflict (the host must know), and the next one starts from the log's state.
        if (ExpectedVersionConflictError.isInstance(error)) await this.#reload().catch(() => undefined);
        else if (seal) await this.#seal().catch(() => undefined);
        // An append failed: the state is again what the log holds, and what the operation left in
        // flight is recovered before the next one (docs/embedding.md, "When an append fails").
        if (this.store.failedAppends !== failedAppends) {
          this.#reopenOwed = true;
          await this.#reload().catch(() => undefined);
        }
        throw error;
      }
      if (seal) await this.#seal();
      return value;
    });
    this.#queue = result.catch(() => undefined).finally(() => (this.#busy -= 1));
    // `runtime.close()` waits for it: what it appends is in the log before the log closes.
    this.hosting.track?.(result);
    return result;
  }

  async #reload(): Promise<void> {
    await this.store.reload();
    this.deps.sync.forget();
  }

  /**
   * Loads a released session from the log, as opening it would (create-runtime.ts): a new store,
   * checked and recovered by the runtime's opening; what an earlier failed append left is
   * recovered by that too.
   */
  async #restore(): Promise<void> {
    const residency = this.hosting.residency;
    if (this.#store !== undefined || residency === undefined) return;
    this.#store = await residency.load(this.#id);
    this.#reopenOwed = false;
    this.deps.sync.forget();
  }
}

/**
 * How the process that runs a session judges an edit of a held call (docs/policy.md#edit-on-approval):
 * with `tool` as it will run, real paths and git entries read from this machine, and the runtime's
 * secret check. Used by `session.approve` and by a runtime answering its LevelDB owner channel.
 */
export function runningEditOwner(tool: ToolDefinition | undefined, realPath: (absolute: string) => string, redactor: SecretRedactor): EditOwner {
  return { ...(tool !== undefined ? { tool } : {}), observeRealPath: realPath, observeGitLinks: readGitLinks, containsSecret: (value) => redactor.containsSecret(value) };
}

/**
 * Whether a held call of `state` is past its approval deadline (decisions version 7,
 * docs/policy.md#approval-deadlines) by the time an append to its stream would carry now.
 */
export function pastDeadline(log: EventLog, state: SessionState): boolean {
  return expiredApprovals(state, earliestNextTime(log.clock ?? systemClock, state.lastRecordedAt)).length > 0;
}

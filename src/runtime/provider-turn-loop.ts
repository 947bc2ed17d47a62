import type { TurnlogEvent } from "../contracts/events.js";
import type { Clock } from "../log/event-log.js";
import type { HistoryCompressor } from "../history/history-compressor.js";
import { activeTurn, pendingApprovals, type SessionState } from "../projections/session-state.js";
import type { Provider, ProviderRequest } from "../providers/provider.js";
import { ProviderFailureKindSchema } from "../contracts/provider.js";
import { ProviderError } from "../errors/provider-error.js";
import { buildRequestHistory } from "../providers/format-history.js";
import type { DecisionAction } from "../core/actions.js";
import { nextStep } from "../core/next-step.js";
import { providerRequest, type Decision } from "../core/decide.js";
import { responseEvent } from "../core/response-event.js";
import type { ToolRegistry } from "../tools/tool-registry.js";
import type { GateEnvironment } from "../policy/gate.js";
import type { SecretRedactor } from "../policy/secrets/secret-detector.js";
import type { SecretVault } from "./secret-vault.js";
import { maxCarriedConflicts, type SessionStore } from "./session-store.js";
import { turnWrittenElsewhere } from "./turn-elsewhere.js";
import { ToolPlanRunner, type CallContext, type ToolRunEnd } from "./tool-plan-runner.js";
import { ExpectedVersionConflictError } from "../errors/expected-version-conflict-error.js";
import { SessionStateError } from "../errors/session-state-error.js";
import type { SessionSync } from "./session-sync.js";
import { decideObserving } from "../core/decide-observing.js";
import { decideCommand } from "../core/session-decider.js";
import { approvalDeadline, approvalDeadlines } from "../core/approval-deadlines.js";
import { askHostRules, realInput, type HostRuleCall } from "./host-rules.js";
import { systemClock } from "../log/event-recording.js";
import { earliestNextTime } from "../log/recorded-time.js";
import { describeThrown } from "../util/json-value.js";
import { wellFormedText } from "../util/well-formed-text.js";
import { turnEndings } from "../core/session-fold.js";
import { heldCalls, type PendingApproval } from "../core/held-calls.js";
import { setTimeout as sleep } from "node:timers/promises";
import { defaultProviderRetry, providerRetryDelayMs, type ProviderRetryPolicy } from "./provider-retry.js";


/**
 * How a `send` or `resume` ended, or (`session.outcome()`) where a session stands:
 * - `completed`: the model gave its final answer (`text`);
 * - `awaiting-approval`: calls are held for a person (`pendingApprovals`);
 * - `needs-resume`: the session owes work — every held call was answered, or a turn was cut off
 *   by a crash and recovered — and `resume()` continues it (`reason`: `approvals-answered` or
 *   `unfinished-turn`); or (`reason: "in-progress-elsewhere"`) another host on a shared log is
 *   performing the turn's next effect, and this `send` / `resume` left the turn to it;
 * - `stopped`: a budget, a cancel or a refusal ended the turn (`reason`);
 * - `failed`: the turn could not go on (`reason`);
 * - `idle`: nothing was asked yet.
 */
export interface SendOutcome {
  status: "completed" | "awaiting-approval" | "needs-resume" | "stopped" | "failed" | "idle";
  text?: string;
  reason?: string;
  /**
   * Why a `failed` turn failed, in words: the `turn.failed` message as logged (so already
   * redacted), e.g. the provider's last error. Absent when the failure recorded none.
   */
  message?: string;
  pendingApprovals: PendingApproval[];
}

/** Which provider attempt a streamed delta belongs to (`RuntimeOptions.onDelta`'s second argument). */
export interface DeltaContext {
  sessionId: string;
  turnId: string;
  /** The attempt's number within the turn, as `turn.provider.requested` records it (1-based). */
  attempt: number;
}

/**
 * A provider attempt whose text was streamed and then thrown away: it ended in
 * `turn.provider.failed` (a dropped stream, a timeout, tool calls cut off by the length limit), so
 * none of its text reaches the log or the history. Text shown from its deltas should be withdrawn
 * or marked; a retry, if one follows, streams again under the next attempt number.
 */
export interface DiscardedAttempt extends DeltaContext {
  /** The failure's kind, as `turn.provider.failed` records it (`incomplete-stream`, `timeout`, …). */
  reason: string;
  /** Whether the failure allows another attempt (one follows unless the turn's attempts are used up). */
  retryable: boolean;
  /** How many characters of text the attempt streamed before it failed. */
  streamedChars: number;
}

export interface LoopDependencies {
  provider: Provider;
  registry: ToolRegistry;
  clock: Clock;
  /** Real argument texts of redacted calls, in memory only. */
  vault: SecretVault;
  /** Every text this runtime logs passes it: the secret detector plus the host's known secrets. */
  redactor: SecretRedactor;
  /** How the gate resolves paths through symlinks (the same resolver replay uses). */
  gate: GateEnvironment;
  /** Summarizes history that no longer fits the token budget (default: deterministic). */
  compressor?: HistoryCompressor;
  onDelta?: (text: string, context: DeltaContext) => void;
  /** Told, after `turn.provider.failed` is logged, that an attempt which streamed text was discarded. */
  onAttemptDiscarded?: (attempt: DiscardedAttempt) => void;
  /** The most characters of one tool output the log keeps. Default 1 000 000. */
  maxStoredOutputChars?: number;
  /** The wait before a retried provider attempt (default: 500 ms doubling, at most 8 s). */
  providerRetry?: ProviderRetryPolicy;
  /** What the session owes its log before a decision: a changed tool set, a decisions upgrade. */
  sync: SessionSync;
  /**
   * The log is shared by processes (it grants leases: PostgreSQL). Then an effect whose start is
   * in the log but was not appended by this run — a provider request, a tool start — is another
   * host's, and this run leaves the turn to it instead of performing it a second time.
   */
  shared?: boolean;
  /** Whether a call found started and not ended may run again (idempotent and read-only only). */
  rerunInDoubt?: boolean;
  /** Runs a tool's handler in the context of its call's live span (`createRuntime({ tracer })`). */
  inCallContext?: CallContext;
}

/** The reason of a `needs-resume` outcome whose turn another host is performing. */
export const inProgressElsewhere = "in-progress-elsewhere";

/**
 * Drives a session's turns until one completes with a final answer, stops (budget, cancel),
 * pauses for approval, or fails. It is an interpreter of the turn machine: each step either
 * computes the decision the machine owes (pure, shared with replay) and appends it, or performs an
 * effect (call the provider, run tools) whose outcome is appended as an input event. The event is
 * always durable before the next action runs.
 */
export class ProviderTurnLoop {
  /** The `Retry-After` of the last failed attempt, for the wait before the next one. */
  #retryAfter: { turnId: string; attempt: number; ms: number } | undefined;

  /**
   * @param recoverLost Given when this run holds the session's lease: recovers the session as
   *   after a crash of this run's own (session-recovery.ts). The loop calls it when a reload found
   *   that the log lost events this run had appended — a PostgreSQL server that crashed loses its
   *   last asynchronous commits (`durable: false`) while the host lives on. A provider request or
   *   tool start left in flight at the log's new head is then this run's own, whose outcome the
   *   log lost: not another host's effect to leave to it.
   */
  constructor(
    private readonly store: SessionStore,
    private readonly deps: LoopDependencies,
    private readonly recoverLost?: () => Promise<void>,
  ) {}

  /**
   * Runs the session until nothing is owed, a person must answer, or another host performs the
   * next effect. An append that loses a race to another writer (`ExpectedVersionConflictError`)
   * does not end it: it folds what the other writer appended and derives its next step again with
   * `nextStep` (docs/embedding.md, "Many hosts, one log"). A decision is made again on the new
   * state (the same one the other host made, if it made it: the log holds it once); an effect
   * whose start another writer appended is never performed here — the run returns
   * `needs-resume` / `in-progress-elsewhere`. At most {@link maxCarriedConflicts} races per run.
   */
  async run(signal: AbortSignal): Promise<SendOutcome> {
    // The request the last requestProvider decision built, for the callProvider it owes.
    let request: ProviderRequest | undefined;
    let lostRaces = 0;
    let seenReloads = this.store.reloads;
    let seenRefolds = this.store.refolds;
    for (;;) {
      if (signal.aborted) return this.#cancel();
      try {
        // The log lost what this run appended last; under the lease, what it holds in flight is ours.
        if (this.store.refolds !== seenRefolds && this.recoverLost !== undefined) {
          seenRefolds = this.store.refolds;
          request = undefined;
          await this.recoverLost();
          continue;
        }
        const step = nextStep(this.store.fold, this.deps.registry);
        // Another writer's events were folded in: the tool set it recorded is compared again.
        if (this.store.reloads !== seenReloads) {
          seenReloads = this.store.reloads;
          this.deps.sync.forget();
        }
        // Another writer appended to this turn (a race lost in this run or earlier, on any log): it may be driving it.
        const othersMayDrive = this.deps.shared === true || lostRaces > 0 || turnWrittenElsewhere(this.store);
        // What was decided goes to the log before the host hears the outcome; a race lost there
        // is carried on like any other (awaited inside the try).
        if (step.kind === "none") return await this.#handBack(outcomeOf(this.store.state));
        if (step.kind === "wait") {
          // A held call past its deadline is denied (approval:timeout), and the turn goes on.
          if (await this.#expireApprovals()) continue;
          return await this.#handBack(outcomeOf(this.store.state, "awaiting-approval"));
        }
        if (step.kind === "decision" && step.action !== "startTool") {
          if (this.#sync(step.action)) continue;
          if (step.action === "gateToolCalls" && (await this.#askHostRules())) continue;
          if (step.action === "requestProvider") await this.#waitBeforeRetry(signal);
          const decision = this.#decideAll(step.action);
          // Decided now, appended with the run of decisions it belongs to, before the next effect.
          this.store.stage(decision.events);
          request = decision.request;
        } else if (step.kind === "effect" && step.action === "callProvider") {
          // A request this run did not append is another host's to send: never sent twice.
          if (request === undefined && othersMayDrive) return await this.#handBack(handedOver());
          // The request is durable before it is sent: it is never repeated without a trace.
          await this.store.flush();
          // Rebuilt only when the decision was made by an earlier run (the compaction it recorded changes nothing in it).
          await this.#callProvider(signal, request ?? providerRequest(buildRequestHistory(this.store.state, this.deps.compressor), this.deps.registry));
          request = undefined;
        } else {
          await this.#flushBeforeEffect();
          // startTool or runToolCalls: the runner makes each start decision and runs the call.
          const end: ToolRunEnd = await this.#runTools(signal);
          if (end === "elsewhere") {
            if (othersMayDrive) return handedOver();
            // Calls started in the log that this process is not running, on a log no other host
            // writes: left by an operation whose append failed, they are recovered before the next
            // operation (session.ts); a host that gets here has a session the log moved under it.
            throw new SessionStateError(
              `session ${this.store.sessionId}: ${step.kind === "effect" ? (step.reason ?? "calls must end first") : "a call cannot start"}, and no call of this run is running: open the session again to recover the calls it started`,
            );
          }
        }
      } catch (error) {
        if (signal.aborted) return this.#cancel();
        if (!ExpectedVersionConflictError.isInstance(error) || lostRaces >= maxCarriedConflicts) {
          await this.#keepStaged();
          throw error;
        }
        // Lost a race: carry on from what the log holds now.
        lostRaces += 1;
        await this.store.reload();
        request = undefined;
      }
    }
  }

  /**
   * Appends the staged decisions before tools run, in one append. It is fsynced when it ends a
   * turn (docs/performance.md#what-makes-a-tool-call-cheap-issue-15: an fsync is owed before a side effect starts, before a result reaches the
   * host, and at the end of a turn); otherwise it rides on the next synced append: a tool whose
   * start must be durable before it runs gets a durable start of its own (tool-plan-runner.ts),
   * and if a crash loses a provider's answer and the decisions on it, its durable request is
   * found unanswered on reopen and becomes a failed, retryable attempt. The flush before a
   * provider request is always fsynced; since it also holds the end of the turn before, that is
   * one fsync per turn.
   */
  async #flushBeforeEffect(): Promise<void> {
    const endsTurn = this.store.staged.some((event) => turnEndings.has(event.type));
    await this.store.flush(endsTurn ? {} : { durable: false });
  }

  /**
   * Records the denials by `approval:timeout` the held calls owe at the time the append carries
   * (decisions version 7, `policy.approvalTimeoutMs`): true when it recorded any. The log's clock
   * decides, read once for the append (`SessionStore.recordedTime`), so replay judges the same time.
   */
  async #expireApprovals(): Promise<boolean> {
    const first = approvalDeadlines(this.store.state)[0];
    // The batch's time is never before the clock's reading nor the stream's last time: before
    // both reach the first deadline, nothing can be owed (and nothing is appended to find out).
    const lowest = earliestNextTime(this.store.log.clock ?? systemClock, this.store.state.lastRecordedAt);
    if (first === undefined || lowest < first.deadline) return false;
    await this.store.flush();
    const denied = await this.store.appendWith(() => decideCommand({ type: "expireApprovals", recordedAt: this.store.recordedTime() }, this.store.fold));
    return denied.length > 0;
  }

  /** Appends (durably) what is staged before an outcome reaches the host. */
  async #handBack(outcome: SendOutcome): Promise<SendOutcome> {
    await this.store.flush();
    return outcome;
  }

  /** After an error that ends the run: what was decided before it is appended, if it can be. */
  async #keepStaged(): Promise<void> {
    try {
      await this.store.flush();
    } catch {
      this.store.discardStaged();
    }
  }

  /**
   * Stages what the log owes before this decision (a changed tool set; between turns, a
   * decisions upgrade). True when it staged something, so the next step is looked up again.
   */
  #sync(action: string): boolean {
    const sync = this.deps.sync;
    const owed = sync.owed(this.store.fold, action === "startTurn" && activeTurn(this.store.state) === undefined);
    this.store.stage(owed);
    sync.synced();
    return owed.length > 0;
  }

  /**
   * Before the gate decides (decisions version 7 on): asks the `needsApproval` of the tools of the
   * turn's planned calls and stages their answers (`session.environment.observed.hostRules`), which
   * the gate then reads from the state. True when it staged something. A call's real arguments are
   * used when the log holds them redacted and this process still has them.
   */
  async #askHostRules(): Promise<boolean> {
    const { state } = this.store;
    const turn = activeTurn(state);
    if (turn === undefined) return false;
    const calls: HostRuleCall[] = [];
    for (const callId of turn.callIds) {
      const call = state.calls.get(callId);
      const tool = call?.status === "planned" ? this.deps.registry.get(call.name) : undefined;
      if (call === undefined || tool?.needsApproval === undefined) continue;
      calls.push({ callId, tool, input: realInput(tool, call.input, call.argumentsRedacted === true ? this.deps.vault.get(call.turnId, call.index) : undefined), source: "model" });
    }
    const observed = await askHostRules(state, calls, this.deps.redactor);
    if (observed === undefined) return false;
    this.store.stage([observed]);
    return true;
  }

  #decideAll(action: DecisionAction): Decision {
    const { state } = this.store;
    const turn = this.store.fold.turnContext;
    const vault = this.deps.vault;
    return decideObserving(action, {
      state,
      ...(turn !== undefined ? { turn } : {}),
      registry: this.deps.registry,
      policy: this.store.policy,
      budgets: this.store.budgets,
      rawArguments: (turnId, index) => vault.get(turnId, index),
      redactor: this.deps.redactor,
      gate: this.deps.gate,
      ...(this.deps.compressor !== undefined ? { compressor: this.deps.compressor } : {}),
    });
  }

  async #callProvider(signal: AbortSignal, request: ProviderRequest): Promise<void> {
    const { state } = this.store;
    const turn = activeTurn(state);
    if (turn === undefined) throw new Error("turn loop: callProvider without an active turn");
    const { provider } = this.deps;
    let event: TurnlogEvent;
    // Every delta says which attempt it belongs to, and a failed attempt that streamed text is
    // announced as discarded: a host showing the text as it streams knows what to take back.
    const context: DeltaContext = { sessionId: this.store.sessionId, turnId: turn.turnId, attempt: turn.attempt };
    const onDelta = this.deps.onDelta;
    let streamedChars = 0;
    const tagged = (text: string) => {
      streamedChars += text.length;
      onDelta?.(text, context);
    };
    try {
      const response = await provider.complete(request, { signal, ...(onDelta !== undefined ? { onDelta: tagged } : {}) });
      // Truncation, redaction and the echo: one pure step (src/core/response-event.ts).
      const recorded = responseEvent(turn, response, this.deps.redactor);
      for (const [index, text] of recorded.secretArguments) this.deps.vault.set(turn.turnId, index, text);
      event = recorded.event;
    } catch (error) {
      if (signal.aborted) throw error;
      const known = ProviderError.isInstance(error);
      // A host's own adapter builds its ProviderError in untyped JavaScript: what the event
      // catalogue would not read back (an unknown kind, a status of NaN) is left out or defaulted.
      const status = known && Number.isInteger(error.status) ? error.status : undefined;
      const retryAfterMs = known && typeof error.retryAfterMs === "number" && Number.isFinite(error.retryAfterMs) && error.retryAfterMs >= 0 ? Math.ceil(error.retryAfterMs) : undefined;
      event = {
        type: "turn.provider.failed",
        data: {
          turnId: turn.turnId,
          attempt: turn.attempt,
          kind: known && ProviderFailureKindSchema.safeParse(error.kind).success ? error.kind : "transport",
          retryable: known ? error.retryable === true : true,
          // An error message can quote a request (and its key): it is redacted like everything else,
          // once made valid Unicode (an HTTP body cut mid-character, a host adapter's own text).
          message: this.deps.redactor.redactText(wellFormedText(describeThrown(error))).text,
          ...(status !== undefined ? { status } : {}),
          ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
        },
      };
      if (retryAfterMs !== undefined) this.#retryAfter = { turnId: turn.turnId, attempt: turn.attempt, ms: retryAfterMs };
    }
    if (event.type !== "turn.provider.failed") {
      // The answer goes in one append with the decisions it leads to (normalize, plan, gate).
      this.store.stage([event]);
      return;
    }
    await this.store.append([event]);
    if (streamedChars > 0) {
      this.deps.onAttemptDiscarded?.({ ...context, reason: event.data.kind, retryable: event.data.retryable, streamedChars });
    }
  }

  /**
   * Backs off before a retried provider attempt (`RuntimeOptions.providerRetry`). It is an effect
   * of the live loop, not a decision: nothing is logged for it, and replay (which never calls the
   * provider) never waits. The delay is a function of the failed attempt's number and the
   * server's `Retry-After` only — no jitter — and an abort of `signal` ends it at once.
   */
  async #waitBeforeRetry(signal: AbortSignal): Promise<void> {
    const turn = activeTurn(this.store.state);
    // requestProvider after an attempt means that attempt failed (the machine re-entered `finalizing`).
    const failure = turn?.failures.at(-1);
    if (turn === undefined || turn.attempt === 0 || failure === undefined) return;
    const hint = this.#retryAfter;
    this.#retryAfter = undefined;
    const retryAfterMs = hint !== undefined && hint.turnId === turn.turnId && hint.attempt === turn.attempt ? hint.ms : undefined;
    const delay = providerRetryDelayMs(this.deps.providerRetry ?? defaultProviderRetry, {
      attempt: turn.attempt,
      kind: failure.kind,
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    });
    if (delay > 0) {
      // Nothing decided waits in memory through the pause.
      await this.store.flush({ durable: false });
      await (this.deps.clock.sleep !== undefined ? this.deps.clock.sleep(delay, signal) : sleep(delay, undefined, { signal }));
    }
  }

  /** Runs the turn's cleared calls (docs/architecture.md#running-tools) until none is left to start. */
  #runTools(signal: AbortSignal): Promise<ToolRunEnd> {
    return new ToolPlanRunner(this.store, this.deps).run(signal);
  }

  /**
   * The host cancelled: its `turn.cancel.requested` (the session decider's `cancelTurn`) and the
   * stop the machine then owes (`stopCancelled`), in one append.
   */
  async #cancel(): Promise<SendOutcome> {
    await this.#keepStaged();
    await this.store.appendRun((index) => {
      if (index === 0) return decideCommand({ type: "cancelTurn" }, this.store.fold);
      const step = nextStep(this.store.fold, this.deps.registry);
      return step.kind === "decision" && step.action === "stopCancelled" ? this.#decideAll(step.action).events : [];
    });
    return outcomeOf(this.store.state);
  }
}

/** What a run returns when it leaves the turn to the host that performs its next effect. */
function handedOver(): SendOutcome {
  return { status: "needs-resume", reason: inProgressElsewhere, pendingApprovals: [] };
}

/** The outcome a host sees for the session as it stands. */
export function outcomeOf(state: SessionState, status?: SendOutcome["status"]): SendOutcome {
  const pending = heldCalls(state);
  if (status === "awaiting-approval" || pending.length > 0) return { status: "awaiting-approval", pendingApprovals: pending };
  const turn = activeTurn(state);
  if (turn !== undefined) {
    // Answers given (in this process or another) and not yet acted on, or a turn a crash cut off.
    const answered = turn.callIds.some((id) => state.calls.get(id)?.approval !== undefined) && turn.callIds.every((id) => state.calls.get(id)?.result === undefined);
    return { status: "needs-resume", reason: answered ? "approvals-answered" : "unfinished-turn", pendingApprovals: [] };
  }
  const last = state.lastOutcome;
  if (last !== null) return { ...last, pendingApprovals: [] };
  // A user message whose turns have not ended (the process died before its first turn, or between two).
  if (state.current.userMessages > 0) return { status: "needs-resume", reason: "unfinished-turn", pendingApprovals: [] };
  return { status: "idle", pendingApprovals: [] };
}



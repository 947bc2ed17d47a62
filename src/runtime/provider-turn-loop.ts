import type { TurnlogEvent } from "../contracts/events.js";
import type { Clock } from "../log/event-log.js";
import type { HistoryCompressor } from "../history/history-compressor.js";
import { activeTurn, pendingApprovals, type SessionState } from "../projections/session-state.js";
import type { Provider, ProviderRequest } from "../providers/provider.js";
import { ProviderError } from "../providers/provider.js";
import { buildRequestHistory } from "../history/session-history.js";
import type { DecisionAction } from "../core/actions.js";
import { nextStep } from "../core/next-step.js";
import { providerRequest, type Decision } from "../core/decide.js";
import { responseEvent } from "../core/response-event.js";
import type { ToolRegistry } from "../tools/tool-registry.js";
import type { GateEnvironment } from "../policy/gate.js";
import type { SecretRedactor } from "../policy/secrets/secret-detector.js";
import type { SecretVault } from "./secret-vault.js";
import type { SessionStore } from "./session-store.js";
import { ToolPlanRunner } from "./tool-plan-runner.js";
import { decideObserving, type SessionSync } from "./session-sync.js";
import { setTimeout as sleep } from "node:timers/promises";
import { defaultProviderRetry, providerRetryDelayMs, type ProviderRetryPolicy } from "./provider-retry.js";

export { maxEchoChars } from "../core/response-event.js";

/** A call held for a person's answer, as `send` and `resume` report it. */
export interface PendingApproval {
  callId: string;
  tool: string;
  input: unknown;
  riskClass: string | null;
  rule: string;
  fingerprint: string;
}

/** How a `send` or `resume` ended. */
export interface SendOutcome {
  status: "completed" | "awaiting-approval" | "stopped" | "failed";
  text?: string;
  reason?: string;
  pendingApprovals: PendingApproval[];
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
  onDelta?: (text: string) => void;
  /** The wait before a retried provider attempt (default: 500 ms doubling, at most 8 s). */
  providerRetry?: ProviderRetryPolicy;
  /** What the session owes its log before a decision: a changed tool set, a decisions upgrade. */
  sync: SessionSync;
}

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

  constructor(
    private readonly store: SessionStore,
    private readonly deps: LoopDependencies,
  ) {}

  async run(signal: AbortSignal): Promise<SendOutcome> {
    // The request the last requestProvider decision built, for the callProvider it owes.
    let request: ProviderRequest | undefined;
    for (;;) {
      if (signal.aborted) return this.#cancel();
      const step = nextStep(this.store.fold, this.deps.registry);
      if (step.kind === "none") return outcomeOf(this.store.state);
      if (step.kind === "wait") return outcomeOf(this.store.state, "awaiting-approval");
      try {
        if (step.kind === "decision" && step.action !== "startTool") {
          if (await this.#sync(step.action)) continue;
          if (step.action === "requestProvider") await this.#waitBeforeRetry(signal);
          const decision = this.#decideAll(step.action);
          await this.store.append(decision.events);
          request = decision.request;
        } else if (step.kind === "effect" && step.action === "callProvider") {
          // Rebuilt only when the decision was made by an earlier run (the compaction it recorded changes nothing in it).
          await this.#callProvider(signal, request ?? providerRequest(buildRequestHistory(this.store.state, this.deps.compressor), this.deps.registry));
          request = undefined;
        } else {
          // startTool or runToolCalls: the runner makes each start decision and runs the call.
          await this.#runTools(signal);
        }
      } catch (error) {
        if (signal.aborted) return this.#cancel();
        throw error;
      }
    }
  }

  /**
   * Appends what the log owes before this decision (a changed tool set; between turns, a
   * decisions upgrade). True when it appended, so the next step is looked up again.
   */
  async #sync(action: string): Promise<boolean> {
    const sync = this.deps.sync;
    const owed = sync.owed(this.store.state, action === "startTurn" && activeTurn(this.store.state) === undefined);
    if (owed.length > 0) await this.store.append(owed);
    sync.synced();
    return owed.length > 0;
  }

  #decideAll(action: DecisionAction): Decision {
    const { state } = this.store;
    const turn = this.store.fold.turn?.context;
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
    try {
      const response = await provider.complete(request, { signal, ...(this.deps.onDelta ? { onDelta: this.deps.onDelta } : {}) });
      // Truncation, redaction and the echo: one pure step (src/core/response-event.ts).
      const recorded = responseEvent(turn, response, this.deps.redactor);
      for (const [index, text] of recorded.secretArguments) this.deps.vault.set(turn.turnId, index, text);
      event = recorded.event;
    } catch (error) {
      if (signal.aborted) throw error;
      const known = ProviderError.isInstance(error);
      event = {
        type: "turn.provider.failed",
        data: {
          turnId: turn.turnId,
          attempt: turn.attempt,
          kind: known ? error.kind : "transport",
          retryable: known ? error.retryable : true,
          // An error message can quote a request (and its key): it is redacted like everything else.
          message: this.deps.redactor.redactText(error instanceof Error ? error.message : String(error)).text,
          ...(known && error.status !== undefined ? { status: error.status } : {}),
          ...(known && error.retryAfterMs !== undefined ? { retryAfterMs: error.retryAfterMs } : {}),
        },
      };
      if (known && error.retryAfterMs !== undefined) this.#retryAfter = { turnId: turn.turnId, attempt: turn.attempt, ms: error.retryAfterMs };
    }
    await this.store.append([event]);
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
    if (delay > 0) await sleep(delay, undefined, { signal });
  }

  /** Runs the turn's cleared calls (DESIGN.md §14) until none is left to start. */
  async #runTools(signal: AbortSignal): Promise<void> {
    await new ToolPlanRunner(this.store, this.deps).run(signal);
  }

  async #cancel(): Promise<SendOutcome> {
    const turn = activeTurn(this.store.state);
    if (turn !== undefined) await this.store.append([{ type: "turn.stopped", data: { turnId: turn.turnId, reason: "cancelled" } }]);
    return outcomeOf(this.store.state);
  }
}

/** The outcome a host sees for the session as it stands. */
export function outcomeOf(state: SessionState, status?: SendOutcome["status"]): SendOutcome {
  const pending = pendingApprovals(state).map((call) => ({
    callId: call.callId,
    tool: call.name,
    input: call.input,
    riskClass: call.decision?.riskClass ?? null,
    rule: call.decision?.rule ?? "",
    fingerprint: call.decision?.fingerprint ?? "",
  }));
  if (status === "awaiting-approval" || pending.length > 0) return { status: "awaiting-approval", pendingApprovals: pending };
  const last = state.lastOutcome;
  if (last === null) return { status: "stopped", reason: "idle", pendingApprovals: [] };
  return { ...last, pendingApprovals: [] };
}


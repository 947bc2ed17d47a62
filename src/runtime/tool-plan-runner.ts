import type { z } from "zod";
import type { TurnlogEvent } from "../contracts/events.js";
import { isReadOnlyRisk } from "../contracts/risk.js";
import type { Clock } from "../log/event-log.js";
import { elapsedReading, elapsedSince } from "../log/recorded-time.js";
import { callFingerprint } from "../policy/fingerprint.js";
import type { SecretRedactor } from "../policy/secrets/secret-detector.js";
import { activeTurn, type CallState } from "../projections/session-state.js";
import { isConcurrencySafe, nextToolStart, runnableCalls, startedCalls, type ToolStart } from "../core/tool-schedule.js";
import { defaultMaxResultChars, type ToolContext, type ToolDefinition } from "../tools/define-tool.js";
import type { ToolRegistry } from "../tools/tool-registry.js";
import { storedFailureMessage, storedOutput } from "../tools/packetizer.js";
import { describeThrown, notJsonReason } from "../util/json-value.js";
import { wellFormedText, wellFormedValue } from "../util/well-formed-text.js";
import type { SecretVault } from "./secret-vault.js";
import type { SessionStore } from "./session-store.js";

/** What running tools needs from the runtime. */
export interface ToolRunDependencies {
  registry: ToolRegistry;
  clock: Clock;
  vault: SecretVault;
  redactor: SecretRedactor;
  /** The most characters of one tool output the log keeps (`RuntimeOptions.maxStoredOutputChars`). */
  maxStoredOutputChars?: number;
  /**
   * Whether a call found started and not ended (its process died) may run again when it is
   * idempotent and read-only. Default true; false on a log shared by hosts without the session's
   * lease, where another host may be running that call right now.
   */
  rerunInDoubt?: boolean;
  /** Runs a call's handler in the context of its span (`createRuntime({ tracer })`). */
  inCallContext?: CallContext;
}

/** Runs `run` — a tool's handler — in the context the call needs (its live span's). */
export type CallContext = <T>(callId: string, run: () => T) => T;

/**
 * How a run of the tool runner ended: `done` when no cleared call is left to start and each call
 * it started has ended; `elsewhere` when calls it did not start — another host's, on a shared log
 * — must end before the next may start.
 */
export type ToolRunEnd = "done" | "elsewhere";

/** What the log keeps of one tool output by default: far above what a packet shows (`defaultMaxResultChars`). */
export const defaultMaxStoredOutputChars = 1_000_000;

/**
 * Runs a turn's cleared calls with call-order semantics (docs/architecture.md#running-tools). It holds no schedule of
 * its own: it asks the one tool scheduler in src/core (`nextToolStart`, the function behind
 * `decide("startTool")`, which replay recomputes) what is next, and does what it says — `start`:
 * append the `turn.tool.started` it returned (durable before the handler runs) and launch the call;
 * `wait` or `none`: wait for a running call to end. The scheduler bounds how many calls overlap
 * (the session's `concurrency`) and holds a call until everything of earlier groups has ended, so
 * no pool library is needed here. Ends land in the log in completion order (packets, built later,
 * are in call order).
 */
export class ToolPlanRunner {
  constructor(
    private readonly store: SessionStore,
    private readonly deps: ToolRunDependencies,
  ) {}

  /**
   * Runs until no cleared call is left to start and every call it started has ended. A call found
   * started but not ended (the process died while it ran) runs again first, only if it is
   * idempotent and read-only — recovery has marked every other one interrupted.
   *
   * Its appends carry on through a lost race (another host appended first): a start is decided
   * again on the log's state, so a call another host started is never started (or run) here;
   * the outcome of a call run here is appended unless the log already holds one for it.
   */
  async run(signal: AbortSignal): Promise<ToolRunEnd> {
    for (const call of this.#inDoubt()) {
      signal.throwIfAborted();
      await this.#finish(call, call.turnId, signal);
    }
    const running = new Set<Promise<void>>();
    let failure: { error: unknown } | undefined;
    try {
      // A cancel stops calls that have not started; running ones see the abort through their signal.
      while (failure === undefined && !signal.aborted) {
        const { started, next } = await this.#startNext();
        for (const start of started) {
          const run: Promise<void> = this.#finish(start.call, start.event.data.turnId, signal)
            .catch((error: unknown) => {
              failure ??= { error };
            })
            .finally(() => running.delete(run));
          running.add(run);
        }
        if (started.length > 0) continue;
        if (running.size === 0) return this.#othersRunning() ? "elsewhere" : next.kind === "wait" ? "elsewhere" : "done";
        await Promise.race(running);
      }
    } finally {
      // Every launched call ends (and its end is appended) before the runner returns or throws.
      await Promise.all(running);
    }
    if (failure !== undefined) throw failure.error;
    signal.throwIfAborted();
    return "done";
  }

  /**
   * Asks the scheduler, on the state right before the append, for every start it clears now —
   * each decided on the state with the ones before it — and appends them in one append (a run of
   * decisions, docs/performance.md#what-makes-a-tool-call-cheap-issue-15). It is durable if any of them is: a call that is not safe to run
   * concurrently needs its start on disk before it runs (see `#durability`). Returns the starts
   * and the scheduler's last answer (`wait` or `none`).
   */
  async #startNext(): Promise<{ started: Extract<ToolStart, { kind: "start" }>[]; next: ToolStart }> {
    let started: Extract<ToolStart, { kind: "start" }>[] = [];
    let next: ToolStart = { kind: "none", reason: "the turn is no longer running tools" };
    await this.store.appendRun(
      (index) => {
        if (index === 0) started = [];
        const turn = activeTurn(this.store.state);
        if (turn === undefined || this.store.fold.turnState !== "running") {
          next = { kind: "none", reason: "the turn is no longer running tools" };
          return [];
        }
        next = nextToolStart(this.store.state, turn, this.deps.registry);
        if (next.kind !== "start") return [];
        started.push(next);
        return [next.event];
      },
      () => (started.every((start) => this.#durability(start.call).durable === false) ? { durable: false } : {}),
      { carryOn: true },
    );
    return { started, next };
  }

  /** Whether calls of the active turn that this run did not start are still running (another host's). */
  #othersRunning(): boolean {
    const turn = activeTurn(this.store.state);
    return turn !== undefined && this.store.fold.turnState === "running" && startedCalls(this.store.state, turn).length > 0;
  }

  /** Calls of the active turn that started and never ended, safe to run again. */
  #inDoubt(): CallState[] {
    const turn = activeTurn(this.store.state);
    if (turn === undefined || this.store.fold.turnState !== "running") return [];
    if (this.deps.rerunInDoubt === false) return [];
    return runnableCalls(this.store.state, turn).filter((call) => call.status === "running" && isRerunnable(call, this.deps.registry));
  }

  /** Runs a call whose start is durable, and appends the event that ends it. */
  async #finish(call: CallState, turnId: string, signal: AbortSignal): Promise<void> {
    const input = this.#inputToRun(call);
    const ended = input.ok
      ? await runTool(call, input.value, turnId, {
          registry: this.deps.registry,
          clock: this.deps.clock,
          sessionId: this.store.state.sessionId,
          workspace: this.store.policy.workspace,
          protectedPaths: logDirectoryOf(this.store.log),
          ...(call.decision !== undefined ? { clearance: { rule: call.decision.rule, ...(call.approval?.granted === true ? { approvedBy: call.approval.by } : {}) } } : {}),
          signal,
          ...(this.deps.inCallContext !== undefined ? { inCallContext: this.deps.inCallContext } : {}),
        })
      : toolFailed(call, turnId, input.code, input.message);
    const maxResultChars = this.deps.registry.get(call.name)?.maxResultChars ?? defaultMaxResultChars;
    const stored = capOutcome(redactOutcome(ended, this.deps.redactor), maxResultChars, this.deps.maxStoredOutputChars ?? defaultMaxStoredOutputChars);
    // Built again after a lost race: when another host already recorded an end for this call
    // (its recovery marked it interrupted), that end stands and this one is dropped.
    await this.store.appendWith(() => (this.store.state.calls.get(call.callId)?.status === "running" ? [stored] : []), this.#durability(call), { carryOn: true });
  }

  /**
   * The events of read-only work need no fsync of their own (docs/performance.md#what-makes-a-tool-call-cheap-issue-15): the next synced
   * append — the packets at the latest — makes them durable, since the log is written in order.
   * After a crash, a read whose events were lost simply runs again, which is harmless.
   */
  #durability(call: CallState): { durable?: boolean } {
    return isConcurrencySafe(call, this.deps.registry) ? { durable: false } : {};
  }

  /**
   * The input a cleared call runs with: the logged plan input, or for a call whose arguments were
   * redacted, the real ones from memory. Either way its fingerprint (taken over the logged, redacted
   * form) must be the one the gate decided and a person approved; otherwise it does not run.
   */
  #inputToRun(call: CallState): { ok: true; value: unknown } | { ok: false; code: string; message: string } {
    let value: unknown = call.input;
    if (call.argumentsRedacted) {
      const raw = this.deps.vault.get(call.turnId, call.index);
      if (raw === undefined) {
        return { ok: false, code: "arguments-unavailable", message: "the arguments held a secret that is never stored, and the process restarted before the call ran" };
      }
      value = raw.trim() === "" ? {} : (JSON.parse(raw) as unknown);
    }
    // Over the logged form: the redacted one for a call whose arguments were redacted (this
    // process redacted them, with the same rules and secrets), the logged input as it is
    // otherwise — redacting it again under newer rules would fail a call decided before an upgrade.
    const fingerprint = callFingerprint(call.name, call.argumentsRedacted ? this.deps.redactor.redactValue(value).value : value);
    const approved = call.approval?.fingerprint ?? fingerprint;
    // An edited call (docs/policy.md#edit-on-approval) is bound by its approval, over the edited
    // arguments; the gate's fingerprint is the proposed call's.
    const decided = call.edit !== undefined ? approved : call.decision?.fingerprint;
    if (fingerprint !== decided || fingerprint !== approved) {
      return { ok: false, code: "fingerprint-mismatch", message: "the call's arguments are not the ones that were decided and approved" };
    }
    return { ok: true, value };
  }
}

/** Whether a call that was running when the process died may simply run again. */
export function isRerunnable(call: CallState, registry: ToolRegistry): boolean {
  const tool = registry.get(call.name);
  return tool !== undefined && tool.idempotent && isReadOnlyRisk(tool.risk);
}

export interface ToolRunEnvironment {
  registry: ToolRegistry;
  clock: Clock;
  sessionId: string;
  workspace: ToolContext["workspace"];
  signal: AbortSignal;
  /** What no tool may change: the log's own directory (`ToolContext.protectedPaths`). */
  protectedPaths?: readonly string[];
  /** How the call was cleared to run (`ToolContext.clearance`). */
  clearance?: ToolContext["clearance"];
  /** Runs the handler in the context of the call's span. */
  inCallContext?: CallContext;
}

/**
 * Runs one cleared call whose `turn.tool.started` is already durable, and returns the event that
 * ends it: exactly one `turn.tool.succeeded` or `turn.tool.failed`. A tool that throws, hangs past
 * its timeout or returns garbage fails alone; it never takes down its siblings or the loop. Never
 * throws.
 *
 * This is where a tool's output enters the log (docs/log.md, "Event data"): its
 * text and any error message are made valid Unicode (a lone surrogate becomes U+FFFD) before
 * anything hashes or scans them, and metadata that is not JSON — a BigInt, a function, a symbol,
 * a non-finite number, a cycle — makes the call fail (`invalid-metadata`) instead of the append.
 */
export async function runTool(call: CallState, input: unknown, turnId: string, env: ToolRunEnvironment): Promise<TurnlogEvent> {
  // Durations from the monotonic clock: a wall clock stepping back mid-call cannot shorten one.
  const started = elapsedReading(env.clock);
  const failed = (code: string, message: string): TurnlogEvent => toolFailed(call, turnId, code, wellFormedText(message), elapsedSince(env.clock, started));
  const tool = env.registry.get(call.name);
  if (tool === undefined) return failed("unavailable-tool", `tool "${call.name}" is not registered in this runtime`);
  let parsed: ReturnType<z.ZodType["safeParse"]>;
  try {
    parsed = (tool.input as z.ZodType).safeParse(input);
  } catch (error) {
    // A refinement of the host's own schema can throw instead of reporting an issue.
    return failed("invalid-input", describeThrown(error));
  }
  if (!parsed.success) return failed("invalid-input", parsed.error.message);

  const guard = new CallGuard(env.signal, tool.timeoutMs);
  try {
    const ctx: ToolContext = {
      get signal() {
        return guard.signal;
      },
      callId: call.callId,
      sessionId: env.sessionId,
      workspace: env.workspace,
      protectedPaths: env.protectedPaths ?? [],
      ...(env.clearance !== undefined ? { clearance: env.clearance } : {}),
    };
    const result = await guard.race(env.inCallContext !== undefined ? env.inCallContext(call.callId, () => invoke(tool, parsed.data, ctx)) : invoke(tool, parsed.data, ctx));
    const durationMs = elapsedSince(env.clock, started);
    if (typeof result === "string") return { type: "turn.tool.succeeded", data: { turnId, callId: call.callId, output: wellFormedText(result), durationMs } };
    if (typeof result === "object" && result !== null && typeof result.content === "string" && typeof result.ok === "boolean") {
      if (!result.ok) return failed("tool-error", result.content);
      const data = { turnId, callId: call.callId, output: wellFormedText(result.content), durationMs };
      if (result.metadata === undefined) return { type: "turn.tool.succeeded", data };
      const metadata = storableMetadata(result.metadata);
      if (typeof metadata === "string") return failed("invalid-metadata", `the tool returned metadata the log cannot store: ${metadata}`);
      return { type: "turn.tool.succeeded", data: { ...data, metadata } };
    }
    return failed("invalid-result", "the tool returned neither a string nor { ok, content }");
  } catch (error) {
    if (guard.timedOut) return failed("timeout", `the tool did not finish within ${tool.timeoutMs} ms`);
    if (env.signal.aborted) return failed("aborted", "the run was cancelled");
    return failed("tool-exception", describeThrown(error));
  } finally {
    guard.release();
  }
}

/**
 * A tool's metadata as the log stores it — a JSON object, its strings (keys included) made valid
 * Unicode — or, when it is not one, why (a sentence for the model and the host).
 */
function storableMetadata(metadata: unknown): Record<string, unknown> | string {
  if (typeof metadata !== "object" || metadata === null || Array.isArray(metadata)) return "metadata is not an object";
  const reason = notJsonReason(metadata, "metadata");
  if (reason !== undefined) return reason;
  return wellFormedValue(JSON.parse(JSON.stringify(metadata)) as Record<string, unknown>);
}

/**
 * The directory of a log kept on disk (a `LevelEventLog`), as a list: empty for any other log.
 * No tool may write there, so the agent cannot erase its own audit trail through a tool.
 */
export function logDirectoryOf(log: unknown): string[] {
  const directory = (log as { directory?: unknown }).directory;
  return typeof directory === "string" ? [directory] : [];
}

/** The event that ends a call that failed (or could not start). */
export function toolFailed(call: CallState, turnId: string, code: string, message: string, durationMs = 0): TurnlogEvent {
  return { type: "turn.tool.failed", data: { turnId, callId: call.callId, code, message, durationMs } };
}

/**
 * Tool outputs (MCP results included), their metadata, and error messages are redacted the same
 * way as arguments before they are logged.
 */
function redactOutcome(event: TurnlogEvent, redactor: SecretRedactor): TurnlogEvent {
  if (event.type === "turn.tool.succeeded") {
    const redacted = redactor.redactText(event.data.output);
    const metadata = event.data.metadata === undefined ? undefined : redactor.redactValue(event.data.metadata);
    if (!redacted.redacted && metadata?.redacted !== true) return event;
    return { ...event, data: { ...event.data, output: redacted.text, ...(metadata !== undefined ? { metadata: metadata.value as Record<string, unknown> } : {}), redacted: true } };
  }
  if (event.type === "turn.tool.failed") {
    const redacted = redactor.redactText(event.data.message);
    return redacted.redacted ? { ...event, data: { ...event.data, message: redacted.text, redacted: true } } : event;
  }
  return event;
}

/**
 * Cuts a (redacted) output — or a failed call's message — longer than the log keeps to its head
 * and tail, recording the cut (`storedOutput`, `storedFailureMessage`): the packet computed from
 * what is stored equals the one the whole text gives.
 */
function capOutcome(event: TurnlogEvent, maxResultChars: number, maxStoredChars: number): TurnlogEvent {
  if (event.type === "turn.tool.failed") {
    const { message, stored } = storedFailureMessage(event.data.code, event.data.message, { maxResultChars, maxStoredChars });
    return stored === undefined ? event : { ...event, data: { ...event.data, message, stored } };
  }
  if (event.type !== "turn.tool.succeeded") return event;
  const { output, stored } = storedOutput(event.data.output, { maxResultChars, maxStoredChars });
  return stored === undefined ? event : { ...event, data: { ...event.data, output, stored } };
}

async function invoke(tool: ToolDefinition, input: unknown, ctx: ToolContext) {
  return tool.run(input, ctx);
}

/**
 * What ends one tool call early: the run's cancel (with the run's reason) or its timeout (with a
 * `TimeoutError`, as `AbortSignal.timeout` gives). `race` settles when the tool does or when
 * either comes first, so a hung tool cannot hold the loop; the tool sees the same through
 * `ctx.signal`.
 *
 * Why not `AbortSignal.any([run, AbortSignal.timeout(ms)])` per call: that timer cannot be
 * cleared (every call left one pending for its whole timeout), and an AbortController and its
 * listeners per call were a tenth of a no-op tool call's CPU (docs/performance.md#what-makes-a-tool-call-cheap-issue-15). Here the timer is
 * cleared when the call ends, the controller is made only when the tool reads `ctx.signal`, and a
 * run's cancel reaches its calls through one listener per run signal.
 */
class CallGuard {
  #controller: AbortController | undefined;
  #reason: { value: unknown } | undefined;
  #reject: ((reason: unknown) => void) | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  timedOut = false;

  constructor(
    private readonly run: AbortSignal,
    timeoutMs: number,
  ) {
    if (run.aborted) {
      this.#reason = { value: run.reason };
      return;
    }
    this.#timer = setTimeout(() => {
      this.timedOut = true;
      this.abort(new DOMException("The operation was aborted due to timeout", "TimeoutError"));
    }, timeoutMs);
    guardsOf(run).add(this);
  }

  /** The tool's signal, made when first read (aborted already if the call was). */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#reason !== undefined) this.#controller.abort(this.#reason.value);
    }
    return this.#controller.signal;
  }

  abort(reason: unknown): void {
    if (this.#reason !== undefined) return;
    this.#reason = { value: reason };
    this.#controller?.abort(reason);
    this.#reject?.(reason);
  }

  /** Settles as `work` does, or rejects with the reason the call was ended early, whichever is first. */
  race<T>(work: Promise<T>): Promise<T> {
    if (this.#reason !== undefined) {
      work.catch(() => undefined);
      return Promise.reject(this.#reason.value);
    }
    return Promise.race([work, new Promise<never>((_resolve, reject) => (this.#reject = reject))]);
  }

  /** The call has ended: its timer and its place among the run's calls go. */
  release(): void {
    clearTimeout(this.#timer);
    this.#reject = undefined;
    guardsByRun.get(this.run)?.delete(this);
  }
}

/** The calls in flight under each run signal, and the one listener that ends them on a cancel. */
const guardsByRun = new WeakMap<AbortSignal, Set<CallGuard>>();

function guardsOf(run: AbortSignal): Set<CallGuard> {
  let guards = guardsByRun.get(run);
  if (guards === undefined) {
    const created = new Set<CallGuard>();
    guards = created;
    guardsByRun.set(run, created);
    run.addEventListener("abort", () => {
      for (const guard of created) guard.abort(run.reason);
    }, { once: true });
  }
  return guards;
}

import type { GateDecision } from "../contracts/policy.js";
import { callFingerprint } from "../policy/fingerprint.js";
import type { CallState } from "../projections/session-state.js";
import { decideObserving } from "../core/decide-observing.js";
import { decideCommand, type RequestHostTool } from "../core/session-decider.js";
import { askHostRules } from "./host-rules.js";
import type { LoopDependencies } from "./provider-turn-loop.js";
import type { SessionStore } from "./session-store.js";
import { defaultMaxStoredOutputChars, logDirectoryOf, runTool } from "./tool-plan-runner.js";
import { defaultMaxResultChars } from "../tools/define-tool.js";
import { storedOutput } from "../tools/packetizer.js";
import { notJsonReason } from "../util/json-value.js";
import { wellFormedText, wellFormedValue } from "../util/well-formed-text.js";

/** How a host-routed call ended. */
export interface HostToolResult {
  callId: string;
  status: "succeeded" | "failed" | "rejected" | "denied" | "blocked" | "needs-approval";
  /** The tool's output, or what went wrong, in words. */
  content: string;
  errorCode?: string;
  decision?: GateDecision;
  rule?: string;
}

export interface HostToolOptions {
  /** Who asked (the host's user or component). */
  by: string;
  /** A person who approved the call up front: a gate that would ask lets it run. */
  approvedBy?: string;
  signal?: AbortSignal;
}

/**
 * Runs a named tool for the host directly — a deterministic intent such as a button the user
 * pressed — through the same planner and gate as a model's call, logged as
 * `session.native_tool.*` events. It never joins a provider tool group or the native history, so
 * the model does not see it as its own call. Runs between turns only.
 */
export class HostToolExecutor {
  readonly #rawInputs = new Map<string, string>();

  constructor(
    private readonly store: SessionStore,
    private readonly deps: LoopDependencies,
  ) {}

  async run(tool: string, input: unknown, options: HostToolOptions): Promise<HostToolResult> {
    if (typeof options?.by !== "string" || options.by === "") throw new TypeError("runTool needs `by`: who asked");
    if (typeof tool !== "string") throw new TypeError("runTool takes the tool's name as a string");
    if (options.approvedBy !== undefined && typeof options.approvedBy !== "string") throw new TypeError("runTool's `approvedBy` is a string");
    const notJson = notJsonReason(input ?? {}, "input");
    if (notJson !== undefined) throw new TypeError(`runTool's input must be JSON: ${notJson}`);
    const { redactor } = this.deps;
    // What the host handed in, made valid Unicode before it is scanned, logged or run (docs/log.md,
    // "Event data"); the tool runs with exactly what was decided.
    const given = wellFormedValue(JSON.parse(JSON.stringify(input ?? {})) as unknown);
    const redacted = redactor.redactValue(given);
    const request: RequestHostTool = {
      type: "requestHostTool",
      tool: redactor.redactText(wellFormedText(tool)).text,
      input: redacted.value,
      inputRedacted: redacted.redacted,
      by: redactor.redactText(wellFormedText(options.by)).text,
      ...(options.approvedBy !== undefined ? { approvedBy: redactor.redactText(wellFormedText(options.approvedBy)).text } : {}),
    };
    // Refused (SessionStateError) while a turn is open or owed, before anything is appended.
    // Decided before the sync, which appends nothing the decision reads (no host call, no turn).
    const requested = decideCommand(request, this.store.fold);
    const callId = requested[0]?.type === "session.native_tool.requested" ? requested[0].data.callId : "";
    const owed = this.deps.sync.owed(this.store.fold, true);
    if (owed.length > 0) await this.store.append(owed);
    this.deps.sync.synced();
    await this.store.append(requested);
    if (redacted.redacted) this.#rawInputs.set(callId, JSON.stringify(given));
    // Decisions version 7: the tool's needsApproval, asked about the host's arguments, answers
    // first; the answer is recorded in the same append, ahead of the decision that reads it.
    const definition = this.deps.registry.get(tool);
    const parsed = definition?.needsApproval !== undefined ? definition.input.safeParse(given) : undefined;
    const observed = definition !== undefined && parsed?.success === true ? await askHostRules(this.store.state, [{ callId, tool: definition, input: parsed.data, source: "host" }], redactor) : undefined;
    const appended = await this.store.appendRun((index) => {
      if (index === 0 && observed !== undefined) return [observed];
      if (index > (observed !== undefined ? 1 : 0)) return [];
      return decideObserving("decideHostTool", {
        state: this.store.state,
        registry: this.deps.registry,
        policy: this.store.policy,
        budgets: this.store.budgets,
        gate: this.deps.gate,
        rawHostInput: (id) => this.#rawInputs.get(id),
        redactor,
      }).events;
    });
    const decidedEvent = appended.at(-1);
    if (decidedEvent?.type !== "session.native_tool.decided") throw new Error(`host tool ${callId}: the decision appended ${decidedEvent?.type ?? "nothing"}, not session.native_tool.decided`);
    const decided = decidedEvent.data;
    const base = { callId, ...(decided.decision ? { decision: decided.decision.decision, rule: decided.decision.rule } : {}) };
    if (decided.plan.status !== "planned") {
      const detail = (decided.plan.issues ?? []).map((issue) => (issue.path ? `${issue.path}: ${issue.message}` : issue.message)).join("; ");
      return { ...base, status: "rejected", errorCode: decided.plan.reason ?? "rejected", content: detail };
    }
    if (!decided.runs) {
      const status = decided.decision?.decision === "ask" ? "needs-approval" : decided.decision?.decision === "deny" ? "denied" : "blocked";
      return { ...base, status, errorCode: status, content: `not run: the gate decided ${decided.decision?.decision ?? "block"} (${decided.decision?.rule ?? ""})` };
    }
    const raw = this.#rawInputs.get(callId);
    this.#rawInputs.delete(callId);
    const value = raw === undefined ? decided.plan.input : (JSON.parse(raw) as unknown);
    // The same binding as for a model's call: what runs is what was decided.
    if (callFingerprint(tool, redactor.redactValue(value).value) !== decided.decision?.fingerprint) {
      return this.#complete({ ...base, status: "failed", errorCode: "fingerprint-mismatch", content: "the input is not the one that was decided" }, 0, tool);
    }
    const call = { callId, name: tool } as CallState;
    const ended = await runTool(call, value, "native", {
      registry: this.deps.registry,
      clock: this.deps.clock,
      sessionId: this.store.sessionId,
      workspace: this.store.policy.workspace,
      protectedPaths: logDirectoryOf(this.store.log),
      // Ran on an "ask" only with the host's `approvedBy`: a person approved it.
      ...(decided.decision ? { clearance: { rule: decided.decision.rule, ...(decided.decision.decision === "ask" && options.approvedBy !== undefined ? { approvedBy: options.approvedBy } : {}) } } : {}),
      signal: options.signal ?? new AbortController().signal,
      ...(this.deps.inCallContext !== undefined ? { inCallContext: this.deps.inCallContext } : {}),
    });
    if (ended.type === "turn.tool.succeeded") return this.#complete({ ...base, status: "succeeded", content: ended.data.output }, ended.data.durationMs, tool);
    if (ended.type === "turn.tool.failed") return this.#complete({ ...base, status: "failed", errorCode: ended.data.code, content: ended.data.message }, ended.data.durationMs, tool);
    throw new Error(`host tool executor: unexpected ${ended.type}`);
  }

  /** Logs the end, redacted; the host itself gets the tool's real output. */
  async #complete(result: HostToolResult, durationMs: number, tool: string): Promise<HostToolResult> {
    const content = this.deps.redactor.redactText(result.content);
    const ok = result.status === "succeeded";
    // The same cap as a model's call (tool-plan-runner.ts): a huge output is stored cut, the cut recorded.
    // A host-routed call is never packetized, so a failure's message is cut like an output.
    const { output, stored } = storedOutput(content.text, this.#storageLimits(tool));
    await this.store.append([
      {
        type: "session.native_tool.completed",
        data: {
          callId: result.callId,
          ok,
          durationMs,
          ...(ok ? { output } : { code: result.errorCode ?? "error", message: output }),
          ...(content.redacted ? { redacted: true } : {}),
          ...(stored !== undefined ? { stored } : {}),
        },
      },
    ]);
    return result;
  }

  #storageLimits(tool: string): { maxResultChars: number; maxStoredChars: number } {
    return {
      maxResultChars: this.deps.registry.get(tool)?.maxResultChars ?? defaultMaxResultChars,
      maxStoredChars: this.deps.maxStoredOutputChars ?? defaultMaxStoredOutputChars,
    };
  }
}

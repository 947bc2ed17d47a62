import type { SecretRedactor } from "../policy/secrets/secret-detector.js";
import { SessionStateError } from "../errors/session-state-error.js";
import { activeTurn } from "../projections/session-state.js";
import type { GateEnvironment } from "../policy/gate.js";
import type { ToolRegistry } from "../tools/tool-registry.js";
import { decideObserving } from "../core/decide-observing.js";
import { nextStep } from "../core/next-step.js";
import { hostCallInDoubt } from "./host-tool-executor.js";
import { isRerunnable } from "./tool-plan-runner.js";
import type { SessionStore } from "./session-store.js";

/** What recovering a session needs. */
export interface RecoveryDependencies {
  registry: ToolRegistry;
  gate: GateEnvironment;
  redactor: SecretRedactor;
  /**
   * Whether a call found started and not ended may run again (when idempotent and read-only).
   * Only a process that knows nobody else is running it may: one that owns the log (LevelDB) or
   * holds the session's lease. On a shared log without a lease, another host may be running it
   * right now, so it is marked interrupted like any other call in doubt.
   */
  rerunInDoubt: boolean;
  /**
   * What is recovered is this process's own turn, whose last appends the log lost (a PostgreSQL
   * server crash loses its last asynchronous commits), not a crashed process's: the failed
   * attempt says so.
   */
  lostAppends?: boolean;
}

/**
 * Refuses to continue a session whose unfinished turn holds calls (awaiting approval, or allowed
 * and not yet run) for tools this runtime does not have: each would end as `unavailable-tool`
 * although a person approved it or the gate allowed it.
 */
export function refuseMissingTools(store: SessionStore, registry: ToolRegistry): void {
  const turn = activeTurn(store.state);
  if (turn === undefined) return;
  const missing = new Set<string>();
  for (const callId of turn.callIds) {
    const call = store.state.calls.get(callId);
    if (call !== undefined && (call.status === "awaiting-approval" || call.status === "allowed") && registry.get(call.name) === undefined) missing.add(call.name);
  }
  if (missing.size === 0) return;
  const names = [...missing].join(", ");
  throw new SessionStateError(
    `session ${store.sessionId} has an unfinished turn with calls for tools this runtime does not have: ${names} — open it with a runtime that offers ${missing.size > 1 ? "them" : "it"}`,
  );
}

/**
 * Makes a crashed turn consistent before anything continues it (docs/design.md#7-recovery-and-many-hosts): a provider
 * request with no response becomes a failed, retryable attempt; a tool that started and never
 * ended is marked interrupted and is not run again — unless it is idempotent and read-only and
 * `rerunInDoubt` holds, in which case the tool runner runs it again on resume.
 */
export async function recover(store: SessionStore, deps: RecoveryDependencies): Promise<void> {
  const fold = store.fold;
  let step = nextStep(fold, deps.registry);
  // A host-routed call: decide it if the process died before that, and never run it afterwards.
  if (step.kind === "decision" && step.action === "decideHostTool") {
    await store.append(decideObserving("decideHostTool", { state: store.state, registry: deps.registry, policy: store.policy, budgets: store.budgets, gate: deps.gate, redactor: deps.redactor }).events);
    step = nextStep(fold, deps.registry);
  }
  const inDoubt = hostCallInDoubt(store.state.hostCalls);
  if (inDoubt !== undefined) {
    await store.append([
      { type: "session.native_tool.completed", data: { callId: inDoubt.callId, ok: false, code: "interrupted", message: "the process stopped before the call ended; it was not run again", durationMs: 0 } },
    ]);
  }
  const context = fold.turnContext;
  if (context === undefined) return;
  switch (step.kind === "none" ? undefined : step.action) {
    case "callProvider":
      // The request was written ahead; whether the provider saw it is unknown.
      await store.append([
        {
          type: "turn.provider.failed",
          data: {
            turnId: context.turnId,
            attempt: context.attempt,
            kind: "interrupted",
            retryable: true,
            message: deps.lostAppends === true ? "the log lost the provider's answer (its server crashed before the answer was on disk)" : "the process stopped before the provider answered",
          },
        },
      ]);
      return;
    case "startTool":
    case "runToolCalls": {
      // Tools were running. Only a call that is safe to repeat (idempotent and read-only) runs again, on resume.
      const inDoubt = context.toRun.filter((id) => {
        const call = store.state.calls.get(id);
        return call?.status === "running" && !(deps.rerunInDoubt && isRerunnable(call, deps.registry));
      });
      if (inDoubt.length > 0) {
        await store.append(inDoubt.map((callId) => ({ type: "turn.tool.interrupted" as const, data: { turnId: context.turnId, callId } })));
      }
      return;
    }
    default:
      // A decision owed is made by the next resume; a wait waits; nothing was in flight.
      return;
  }
}

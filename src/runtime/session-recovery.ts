import type { SecretRedactor } from "../policy/secrets/secret-detector.js";
import type { GateEnvironment } from "../policy/gate.js";
import type { ToolRegistry } from "../tools/tool-registry.js";
import { decideObserving } from "../core/decide-observing.js";
import { nextStep } from "../core/next-step.js";
import { decideCommand } from "../core/session-decider.js";
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
 * Makes a crashed session consistent before anything continues it: a host-routed call owed its
 * decision is decided (the turn decider), then the session decider's `recoverSession` says what
 * was in flight — a provider request with no response, a tool that started and never ended, a
 * host-routed call that never completed (src/core/session-decider.ts). The only thing read here
 * is which started calls may run again: idempotent and read-only ones, when `rerunInDoubt` holds
 * (the tool runner runs them again on resume).
 */
export async function recover(store: SessionStore, deps: RecoveryDependencies): Promise<void> {
  const fold = store.fold;
  // A host-routed call: decide it if the process died before that, and never run it afterwards.
  const step = nextStep(fold, deps.registry);
  if (step.kind === "decision" && step.action === "decideHostTool") {
    await store.append(decideObserving("decideHostTool", { state: store.state, registry: deps.registry, policy: store.policy, budgets: store.budgets, gate: deps.gate, redactor: deps.redactor }).events);
  }
  const rerunnable = (deps.rerunInDoubt ? (fold.turnContext?.toRun ?? []) : []).filter((callId) => {
    const call = store.state.calls.get(callId);
    return call?.status === "running" && isRerunnable(call, deps.registry);
  });
  const events = decideCommand({ type: "recoverSession", rerunnable, ...(deps.lostAppends === true ? { lostAppends: true } : {}) }, fold);
  if (events.length > 0) await store.append(events);
}

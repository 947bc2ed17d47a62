import { decideCommand, type ProviderInForce, type StartSession } from "../core/session-decider.js";
import { ExpectedVersionConflictError } from "../errors/expected-version-conflict-error.js";
import { UnknownSessionError } from "../errors/unknown-session-error.js";
import type { ToolRegistry } from "../tools/tool-registry.js";
import { recoverOnOpening, type SessionLeasePolicy } from "./session-lease-policy.js";
import type { RecoveryDependencies } from "./session-recovery.js";
import { maxCarriedConflicts, type SessionStore } from "./session-store.js";

/** What opening a session needs: the runtime's parts, and what a new session records. */
export interface SessionOpening {
  registry: ToolRegistry;
  provider: ProviderInForce;
  leasePolicy: SessionLeasePolicy;
  recovery: RecoveryDependencies;
  /**
   * The `startSession` command of a new session with this ID (what it records, with the effects'
   * results — the machine's directories, the redacted system text — already in it).
   */
  start: (sessionId: string) => StartSession;
}

/** How a session is prepared. */
export interface PrepareOptions {
  /**
   * On a log with leases, leave a turn in flight to the caller's next operation, which recovers it
   * under the lease (`runtime.resumeAll`); without leases it is recovered here as usual.
   */
  leasedRecovery?: boolean;
}

/**
 * Opens a session's store, creating or recovering it, carrying on through races lost to another
 * host preparing the same session at the same moment: an append that loses such a race folds what
 * the other host appended and prepares again from there.
 */
export async function prepareSession(store: SessionStore, create: boolean, opening: SessionOpening, options: PrepareOptions = {}): Promise<void> {
  for (let lost = 0; ; lost += 1) {
    try {
      await prepareOnce(store, create, opening, options);
      return;
    } catch (error) {
      if (!ExpectedVersionConflictError.isInstance(error) || lost >= maxCarriedConflicts) throw error;
      await store.reload();
    }
  }
}

/**
 * A new session starts (`startSession`); one the log holds is reopened (`reopenSession`: a
 * version this turnlog knows, the tools its unfinished turn needs, the runtime's provider) and
 * recovered as the lease policy allows.
 */
async function prepareOnce(store: SessionStore, create: boolean, opening: SessionOpening, options: PrepareOptions): Promise<void> {
  const sessionId = store.sessionId;
  if (store.version === 0) {
    if (!create) throw new UnknownSessionError(sessionId);
    await store.append(decideCommand(opening.start(sessionId), store.fold));
    return;
  }
  const reopened = decideCommand({ type: "reopenSession", provider: opening.provider, tools: opening.registry.names() }, store.fold);
  // Before anything else (a recovery included): later requests name the provider that answers them.
  if (reopened.length > 0) await store.append(reopened);
  if (options.leasedRecovery === true && opening.leasePolicy.leases !== undefined) return;
  await recoverOnOpening(store, opening.leasePolicy, opening.recovery);
}

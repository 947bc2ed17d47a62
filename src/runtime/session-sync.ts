import { homedir, tmpdir } from "node:os";
import type { TurnlogEvent } from "../contracts/events.js";
import { decideCommand, type ProviderInForce, type SessionDecisionState } from "../core/session-decider.js";
import type { ToolRegistry } from "../tools/tool-registry.js";

/** What the gate reads of this machine besides real paths, as `session.started` records it. */
export function observeEnvironment(): { tempDir: string; homeDir: string } {
  return { tempDir: tmpdir(), homeDir: homedir() };
}

/**
 * Keeps a session's log in step with the runtime continuing it: what it owes the log before its
 * next decision, as the session decider's `syncSession` decides it (src/core/session-decider.ts)
 * from what this runtime offers — its provider (another writer may have recorded its own since
 * the session was opened), its tool set (a tool added or removed, an MCP server's
 * `tools/list_changed`) and, with `upgradeSessions: "on-resume"`, its decisions version. It keeps
 * only which registry generation the log was last compared with, so the tool set is snapshotted
 * and compared only after it may have changed.
 */
export class SessionSync {
  /** The registry generation last compared with the log. */
  #generation = -1;
  /** The generation `owed` compared: the registry may change again while its events are appended. */
  #compared = -1;

  constructor(
    private readonly registry: ToolRegistry,
    private readonly upgradeTo: number | undefined,
    private readonly provider?: ProviderInForce,
  ) {}

  /** The events owed before the next decision; `betweenTurns` when no turn is in flight. */
  owed(session: SessionDecisionState, betweenTurns: boolean): TurnlogEvent[] {
    this.#compared = this.registry.generation;
    const toolsMayDiffer = this.#compared !== this.#generation;
    return decideCommand(
      {
        type: "syncSession",
        betweenTurns,
        ...(this.provider !== undefined ? { provider: this.provider } : {}),
        ...(this.upgradeTo !== undefined ? { upgradeTo: this.upgradeTo } : {}),
        // The registry is snapshotted only when it changed since the log was last compared with it.
        ...(toolsMayDiffer ? { tools: this.registry.snapshot() } : {}),
        environment: observeEnvironment(),
      },
      session,
    );
  }

  /** The log now holds the registry's tool set (call after the owed events were appended). */
  synced(): void {
    this.#generation = this.#compared;
  }

  /** The session was reloaded from the log (another writer appended): compare the tool set again. */
  forget(): void {
    this.#generation = -1;
  }
}

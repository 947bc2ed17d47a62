import { homedir, tmpdir } from "node:os";
import type { TurnlogEvent } from "../contracts/events.js";
import type { ToolSnapshot } from "../contracts/tools.js";
import type { SessionState } from "../projections/session-state.js";
import type { ToolRegistry } from "../tools/tool-registry.js";
import { canonicalJson } from "../util/digest.js";

/** What the gate reads of this machine besides real paths, as `session.started` records it. */
export function observeEnvironment(): { tempDir: string; homeDir: string } {
  return { tempDir: tmpdir(), homeDir: homedir() };
}

export { decideObserving } from "../core/decide-observing.js";

/**
 * Keeps a session's log in step with the runtime continuing it: what it owes the log before its
 * next decision.
 *
 * - **Tools**: when the registry's tool set is not the one the log last recorded (a tool added or
 *   removed since the session started, an MCP server's `tools/list_changed`), a
 *   `session.tools.changed` with the whole new set, so replay judges later decisions against it.
 * - **Decisions version**: a session recorded under an older version than the runtime's is moved
 *   to it (`upgradeSessions: "on-resume"`) with `session.decisions.upgraded`, between turns only —
 *   a turn in flight finishes under the version it started with, as Temporal lets a running
 *   workflow finish on the code path it took.
 */
export class SessionSync {
  /** The registry generation last compared with the log. */
  #generation = -1;
  /** The generation `owed` compared: the registry may change again while its events are appended. */
  #compared = -1;

  constructor(
    private readonly registry: ToolRegistry,
    private readonly upgradeTo: number | undefined,
  ) {}

  /** The events owed before the next decision; `betweenTurns` when no turn is in flight. */
  owed(state: SessionState, betweenTurns: boolean): TurnlogEvent[] {
    const events: TurnlogEvent[] = [];
    const to = this.upgradeTo;
    if (betweenTurns && to !== undefined && state.decisionsVersion < to) {
      events.push({
        type: "session.decisions.upgraded",
        data: { from: state.decisionsVersion, to, ...(to >= 2 && state.environment === null ? { environment: observeEnvironment() } : {}) },
      });
    }
    this.#compared = this.registry.generation;
    if (this.#compared !== this.#generation) {
      const live = this.registry.snapshot();
      if (!sameToolSet(state.tools, live)) events.push({ type: "session.tools.changed", data: { tools: live } });
    }
    return events;
  }

  /** The log now holds the registry's tool set (call after the owed events were appended). */
  synced(): void {
    this.#generation = this.#compared;
  }
}

/**
 * Whether a recorded tool set is the live one. A set recorded before tool schemas were (no
 * `parameters`) is compared on everything else: the schema digest already says whether the
 * schema is the same.
 */
export function sameToolSet(recorded: readonly ToolSnapshot[], live: readonly ToolSnapshot[]): boolean {
  if (recorded.length !== live.length) return false;
  return recorded.every((tool, index) => {
    const other = live[index] as ToolSnapshot;
    const { parameters: _ours, ...a } = tool;
    const { parameters: _theirs, ...b } = other;
    return canonicalJson(a) === canonicalJson(b);
  });
}


import { homedir, tmpdir } from "node:os";
import type { TurnlogEvent } from "../contracts/events.js";
import type { ProviderFormat } from "../contracts/provider.js";
import type { ToolSnapshot } from "../contracts/tools.js";
import type { SessionState } from "../projections/session-state.js";
import type { ToolRegistry } from "../tools/tool-registry.js";
import { canonicalJson } from "../util/digest.js";

/** What the gate reads of this machine besides real paths, as `session.started` records it. */
export function observeEnvironment(): { tempDir: string; homeDir: string } {
  return { tempDir: tmpdir(), homeDir: homedir() };
}

/** The provider a runtime answers with, as a session records it. */
export interface ProviderInForce {
  id: string;
  format: ProviderFormat;
  maxAttempts: number;
}

/**
 * The `session.config.changed` a session owes when the provider that will answer it is not the one
 * its log names (another id, format or attempts per turn): without it, the next
 * `turn.provider.requested` would record a provider that does not answer.
 */
export function providerChange(state: SessionState, provider: ProviderInForce): TurnlogEvent | undefined {
  const recorded = state.provider;
  if (recorded === null) return undefined;
  if (recorded.id === provider.id && recorded.format === provider.format && recorded.maxAttempts === provider.maxAttempts) return undefined;
  return { type: "session.config.changed", data: { provider: { id: provider.id, format: provider.format, maxAttempts: provider.maxAttempts } } };
}

/**
 * Keeps a session's log in step with the runtime continuing it: what it owes the log before its
 * next decision.
 *
 * - **Provider**: when the log names another provider than the runtime's (another writer recorded
 *   its own since the session was opened), a `session.config.changed` naming the runtime's.
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
    private readonly provider?: ProviderInForce,
  ) {}

  /** The events owed before the next decision; `betweenTurns` when no turn is in flight. */
  owed(state: SessionState, betweenTurns: boolean): TurnlogEvent[] {
    const events: TurnlogEvent[] = [];
    const changed = this.provider !== undefined ? providerChange(state, this.provider) : undefined;
    if (changed !== undefined) events.push(changed);
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

  /** The session was reloaded from the log (another writer appended): compare the tool set again. */
  forget(): void {
    this.#generation = -1;
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


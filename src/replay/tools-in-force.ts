import type { ToolSnapshot } from "../contracts/tools.js";
import { matchesRecorded, recordedTool } from "../tools/recorded-tool.js";
import { registrationPhases, ToolRegistry, type RegistrationPhase } from "../tools/tool-registry.js";

/** The tools decisions at one point of a log are judged against, and which of them came from the log. */
export interface ToolsAtPosition {
  registry: ToolRegistry;
  /** Tools rebuilt from their recorded definitions: the host's code for them is absent or differs. */
  fromLog: ReadonlySet<string>;
}

/**
 * Which tools a replay judges a decision against: the set the log says was offered at that point
 * (`session.started`, then each `session.tools.changed`), in the recorded order. A recorded tool
 * the host has, unchanged, is the host's own definition (checked exactly); one the host lacks or
 * has changed is rebuilt from its recorded definition (checked at schema level). A tool recorded
 * without its schema (older logs) falls back to the host's definition of that name, as replay did
 * before tool sets were recorded.
 */
export class ToolsInForce {
  #last: { recorded: readonly ToolSnapshot[]; at: ToolsAtPosition } | undefined;
  #hostSnapshots: Map<string, ToolSnapshot> | undefined;

  constructor(private readonly host: ToolRegistry) {}

  /** The tools in force for a recorded tool set (the same array gives the same answer, cheaply). */
  at(recorded: readonly ToolSnapshot[]): ToolsAtPosition {
    if (this.#last?.recorded === recorded) return this.#last.at;
    this.#hostSnapshots ??= new Map(this.host.snapshot().map((snapshot) => [snapshot.name, snapshot]));
    const registry = new ToolRegistry();
    const fromLog = new Set<string>();
    for (const snapshot of recorded) {
      const hostTool = this.host.get(snapshot.name);
      const hostSnapshot = this.#hostSnapshots.get(snapshot.name);
      let tool = hostTool !== undefined && hostSnapshot !== undefined && matchesRecorded(hostSnapshot, snapshot) ? hostTool : undefined;
      if (tool === undefined) {
        const rebuilt = recordedTool(snapshot);
        if (rebuilt !== undefined) fromLog.add(snapshot.name);
        tool = rebuilt ?? hostTool;
      }
      if (tool === undefined) continue;
      const phase = registrationPhases.includes(snapshot.phase as RegistrationPhase) ? (snapshot.phase as RegistrationPhase) : "pre-skill-visibility";
      registry.register(tool, { phase, source: snapshot.source ?? "host" });
    }
    const at = { registry, fromLog };
    this.#last = { recorded, at };
    return at;
  }
}

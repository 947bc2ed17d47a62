import type { RecordedTurnlogEvent } from "../log/event-log.js";

/** Calls of one execution group that were running at the same time, as the log shows it. */
export interface ConcurrentRun {
  turnId: string;
  /** The execution group (`turn.tool.started` `data.group`). */
  group: number;
  /** Tool names of the overlapping calls, in the order they started. */
  tools: string[];
  callIds: string[];
  /** Stream position of the first start that overlapped a running call of the group. */
  position: number;
  /** Stream position of the event that ended the last of these calls; absent while one still runs. */
  endPosition?: number;
}

const terminalTypes: ReadonlySet<string> = new Set(["turn.tool.succeeded", "turn.tool.failed", "turn.tool.interrupted"]);

/**
 * The execution groups whose calls overlapped: a call of the group started while another one of
 * it had started and not yet ended. Computed from the recorded order of `turn.tool.started` and
 * the terminal tool events alone, so it shows what happened, not what the plan allowed.
 *
 * @example
 * concurrentRuns(events); // [{ turnId: "turn-1", group: 0, tools: ["read_file", "list_dir"], … }]
 */
export function concurrentRuns(events: readonly RecordedTurnlogEvent[]): ConcurrentRun[] {
  const runs = new Map<string, ConcurrentRun>();
  // The calls running right now, by call ID, with the key of their group.
  const running = new Map<string, { key: string; tool: string }>();
  const ended = new Map<string, number>();
  for (const event of events) {
    const data = event.data as { turnId?: unknown; callId?: unknown; tool?: unknown; group?: unknown };
    if (typeof data.callId !== "string") continue;
    if (event.type === "turn.tool.started" && typeof data.group === "number" && typeof data.turnId === "string") {
      const key = `${data.turnId}\u0000${data.group}`;
      const tool = typeof data.tool === "string" ? data.tool : "call";
      const alongside = [...running].filter(([, call]) => call.key === key);
      if (alongside.length > 0) {
        let run = runs.get(key);
        if (run === undefined) {
          run = { turnId: data.turnId, group: data.group, tools: [], callIds: [], position: event.meta.streamPosition };
          runs.set(key, run);
        }
        for (const [callId, call] of [...alongside, [data.callId, { key, tool }] as const]) {
          if (run.callIds.includes(callId)) continue;
          run.callIds.push(callId);
          run.tools.push(call.tool);
        }
      }
      running.set(data.callId, { key, tool });
    } else if (terminalTypes.has(event.type)) {
      running.delete(data.callId);
      ended.set(data.callId, event.meta.streamPosition);
    }
  }
  return [...runs.values()].map((run) => {
    const ends = run.callIds.flatMap((callId) => ended.get(callId) ?? []);
    return ends.length === run.callIds.length ? { ...run, endPosition: Math.max(...ends) } : run;
  });
}

/**
 * The run as a sentence.
 *
 * @example
 * describeConcurrentRun(run); // "read_file and list_dir ran side by side (group 0)"
 */
export function describeConcurrentRun(run: ConcurrentRun): string {
  const names = run.tools.length <= 2 ? run.tools.join(" and ") : `${run.tools.slice(0, -1).join(", ")} and ${run.tools.at(-1) ?? ""}`;
  return `${names} ran side by side (group ${run.group})`;
}

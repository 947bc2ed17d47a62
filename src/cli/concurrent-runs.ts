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
    if (event.type === "turn.tool.started") {
      const { data } = event;
      const key = `${data.turnId}\u0000${data.group}`;
      const tool = data.tool;
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
    } else if (event.type === "turn.tool.succeeded" || event.type === "turn.tool.failed" || event.type === "turn.tool.interrupted") {
      running.delete(event.data.callId);
      ended.set(event.data.callId, event.meta.streamPosition);
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

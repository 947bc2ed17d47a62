/**
 * Running a child process that a test may SIGKILL at a point of its output: the crash-recovery
 * test and the `kill` soak family (soak/kill/) share it. The kill waits for a line (`when`), lands
 * `delayMs` after it — or `fallbackMs` after the child's `ready` line if `when` has not fired by
 * then — and a child that outlives `deadlineMs` is killed as hung.
 */
import { once } from "node:events";
import type { LogChildProcess } from "./log-child-process.js";

/** The line a kill waits for, and how long after it the kill lands. */
export interface KillTrigger {
  when: (line: string, index: number, lines: readonly string[]) => boolean;
  delayMs: number;
  /** Lands this long after the child's `ready` line if `when` has not fired by then (absent: never). */
  fallbackMs?: number;
}

export interface KillableRun {
  lines: string[];
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  /** What set the kill off, if one was sent: the trigger's line, or its fallback time. */
  killedBy?: "point" | "fallback";
  /** The deadline passed: the child was killed as hung. */
  hung: boolean;
}

/** Waits for `run` to close (every line it printed read), SIGKILLing it at `trigger` or at `deadlineMs`. */
export async function superviseChild(run: LogChildProcess, trigger: KillTrigger | undefined, deadlineMs: number): Promise<KillableRun> {
  // "close", not "exit": every line the child wrote before it died has been read by then.
  const closed = once(run.child, "close");
  let hung = false;
  const timers: NodeJS.Timeout[] = [
    setTimeout(() => {
      hung = true;
      run.child.kill("SIGKILL");
    }, deadlineMs),
  ];
  let killedBy: KillableRun["killedBy"];
  const fire = (by: "point" | "fallback") => {
    if (killedBy !== undefined || hung) return;
    killedBy = by;
    run.child.kill("SIGKILL");
  };
  if (trigger !== undefined) {
    run.waitForLine((line, index) => trigger.when(line, index, run.lines)).then(
      () => {
        if (trigger.delayMs === 0) fire("point");
        else timers.push(setTimeout(() => fire("point"), trigger.delayMs));
      },
      () => undefined, // The child finished before the kill point.
    );
    const { fallbackMs } = trigger;
    if (fallbackMs !== undefined) {
      run.waitForLine((line) => line === "ready" || line.startsWith("ready ")).then(
        () => timers.push(setTimeout(() => fire("fallback"), fallbackMs)),
        () => undefined,
      );
    }
  }
  const [code, signal] = (await closed) as [number | null, NodeJS.Signals | null];
  for (const timer of timers) clearTimeout(timer);
  return { lines: [...run.lines], code, signal, stderr: run.stderr(), ...(killedBy !== undefined ? { killedBy } : {}), hung };
}

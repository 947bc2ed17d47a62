import type { ResolvedLogLocation } from "../../log/log-location.js";
import { randomBytes } from "node:crypto";
import type { Clock, RecordedTurnlogEvent } from "../../log/event-log.js";
import { scriptedProvider } from "../../providers/scripted-provider.js";
import type { SendOutcome } from "../../runtime/provider-turn-loop.js";
import { CliError } from "../../errors/cli-error.js";
import type { TextSink } from "../cli-io.js";
import { describeLocation, logFlag, withLog } from "../log-directory.js";
import { userSeals } from "../../log/seal/user-seals.js";
import { answerCommands, commandLines, heldCallLines, outcomeLines, TimelinePrinter } from "../session-narrative.js";
import { painter } from "../terminal-style.js";
import { createDemoRuntime, demoFiles, demoProviderId } from "./demo-runtime.js";
import { demoApprover, demoQuestion, demoScript, demoWatchRequest } from "./demo-script.js";
import { VirtualWorkspace } from "./virtual-workspace.js";
import { describeThrown } from "../../util/json-value.js";

/** Options of {@link runDemo}. */
export interface RunDemoOptions {
  /** The log: a directory (created when missing) or a PostgreSQL schema (migrated). */
  location: ResolvedLogLocation;
  /** Where the narrative and the timeline go. */
  out: TextSink;
  /** ANSI colors. Default false. */
  color?: boolean;
  /** Decides whether the printed commands need `--dir` or `--log`. Default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Default: the system clock. */
  clock?: Clock;
  /** Default: `demo-<UTC timestamp>-<random>`, so that repeated runs coexist in one log. */
  sessionId?: string;
  /**
   * Stop at the first approval pause and print the commands that answer it and resume the turn,
   * leaving the session awaiting approval in the log. Default false.
   */
  pause?: boolean;
}

/** What {@link runDemo} recorded: the session, how each user message ended, its events and the workspace it left. */
export interface DemoResult {
  sessionId: string;
  /** How the first user message ended (`awaiting-approval` when paused). */
  first: SendOutcome;
  /** How the second one (the endless deploy watch) ended; absent when paused. */
  second?: SendOutcome;
  paused: boolean;
  events: RecordedTurnlogEvent[];
  workspace: VirtualWorkspace;
}

/**
 * Runs the built-in scripted session into the log at `location` (no network, no API key, no real
 * files) and prints its timeline. First message: two reads run side by side, two broken calls are
 * rejected as data, the gate holds the write, the demo approves it as `demo-user`, the turn
 * resumes; the next turn's force push is denied, an install script blocked, a status check with an
 * API token approved and logged redacted; the model gives its final answer. Second message: the
 * model watches a deploy that never finishes until the iteration budget stops the loop. Ends with
 * the commands that inspect, replay and verify the session.
 *
 * With `pause`, it stops at the first held call instead and prints the commands that answer it.
 *
 * @example
 * const { sessionId, second } = await runDemo({ location: { dir: ".turnlog" }, out: process.stdout });
 */
export async function runDemo(options: RunDemoOptions): Promise<DemoResult> {
  const { location, out } = options;
  const color = options.color ?? false;
  const paint = painter(color);
  const env = options.env ?? process.env;
  const clock = options.clock ?? { now: () => Date.now() };
  const sessionId = options.sessionId ?? newDemoSessionId(clock.now());
  const print = (line = "") => out.write(`${line}\n`);

  const workspace = new VirtualWorkspace(demoFiles);
  const provider = scriptedProvider(demoScript(), { id: demoProviderId });

  return withLog(location, { create: true, durability: "sync", clock }, async (log) => {
    // The demo seals as `run` does, with the user's key, so `turnlog verify` shows what a seal proves.
    const runtime = await createDemoRuntime({ log, provider, workspace, clock, seals: await userSeals(location, env) });
    try {
      print(`${paint("accent", "turnlog demo")} ${paint("dim", "— a scripted agent session: no network, no API key, no real files touched")}`);
      print(paint("dim", `its tools work on an in-memory workspace holding ${workspace.files().join(", ")}`));
      print();
      print(`${paint("dim", "session")}  ${sessionId}`);
      print(`${paint("dim", "log    ")}  ${describeLocation(location)}`);
      print();
      print(`${paint("bold", "user ›")} ${demoQuestion}`);
      print();

      const session = await runtime.openSession(sessionId);
      const timeline = new TimelinePrinter(print, paint, color);
      const printNewEvents = async () => {
        const events = await runtime.events(sessionId);
        timeline.printNew(events);
        return events;
      };

      let first = await session.send(demoQuestion);
      await printNewEvents();

      if (options.pause) {
        print();
        for (const pending of first.pendingApprovals) for (const line of heldCallLines(pending, paint)) print(line);
        print();
        print(paint("bold", "The turn now waits in the log for a person's answer. Give it from any later process:"));
        for (const line of commandLines(answerCommands(sessionId, first.pendingApprovals, location, env), paint, location, env)) print(line);
        print();
        print(paint("dim", "(exit code 3: a turn is left awaiting approval)"));
        return { sessionId, first, paused: true, events: await runtime.events(sessionId), workspace };
      }

      while (first.status === "awaiting-approval") {
        print();
        for (const pending of first.pendingApprovals) {
          for (const line of heldCallLines(pending, paint)) print(line);
          const answer = demoAnswer(pending.input);
          const reviewed = { by: demoApprover, note: answer.note, fingerprint: pending.fingerprint };
          if (answer.approve) {
            await session.approve(pending.callId, reviewed);
            print(`${paint("good", "✓  approved")} by ${demoApprover} ${paint("dim", `("${answer.note}")`)}`);
          } else {
            await session.deny(pending.callId, reviewed);
            print(`${paint("bad", "✗  denied")} by ${demoApprover} ${paint("dim", `("${answer.note}")`)}`);
          }
        }
        print(paint("dim", "   resuming the turn"));
        print();
        first = await session.resume();
        await printNewEvents();
      }

      print();
      for (const line of outcomeLines(first, session.state(), timeline.printed, paint)) print(line);
      const summary = workspace.read("summary.md");
      if (summary !== undefined) {
        print();
        print(paint("dim", "summary.md in the in-memory workspace now reads:"));
        for (const line of summary.trimEnd().split("\n")) print(`  ${paint("dim", "│")} ${line}`.trimEnd());
      }

      // The second message only makes sense once the first one is answered.
      let second: SendOutcome | undefined;
      if (first.status === "completed") {
        print();
        print(`${paint("bold", "user ›")} ${demoWatchRequest}`);
        print();
        second = await session.send(demoWatchRequest);
        await printNewEvents();
        print();
        for (const line of outcomeLines(second, session.state(), timeline.printed, paint)) print(line);
        try {
          provider.assertConsumed();
        } catch (error) {
          throw new CliError(`the demo no longer matches its script: ${describeThrown(error)}`, { cause: error });
        }
      }

      print();
      printInspectCommands(print, paint, sessionId, location, env);
      return { sessionId, first, ...(second !== undefined ? { second } : {}), paused: false, events: await runtime.events(sessionId), workspace };
    } finally {
      await runtime.close();
    }
  });
}

/** How the demo's reviewer answers a held call: force pushes are refused, the rest approved. */
function demoAnswer(input: unknown): { approve: boolean; note: string } {
  const command = typeof input === "object" && input !== null ? (input as { command?: unknown }).command : undefined;
  if (typeof command === "string" && command.includes("--force")) return { approve: false, note: "no force pushes to main" };
  if (typeof command === "string") return { approve: true, note: "read-only status check" };
  return { approve: true, note: "only summary.md, and only in the in-memory workspace" };
}

/** `demo-20250612-115959-3fa2`: sortable by time, unique enough for runs in the same second. */
export function newDemoSessionId(now: number): string {
  const stamp = new Date(now).toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
  return `demo-${stamp}-${randomBytes(2).toString("hex")}`;
}

function printInspectCommands(print: (line?: string) => void, paint: ReturnType<typeof painter>, sessionId: string, location: ResolvedLogLocation, env: NodeJS.ProcessEnv): void {
  const flag = logFlag(location, env);
  print(paint("bold", "Inspect it:"));
  const commands: [string, string][] = [
    [`npx turnlog sessions${flag}`, "every session in the log and its status"],
    [`npx turnlog events ${sessionId}${flag}`, "this timeline again (--json for the raw events)"],
    [`npx turnlog show ${sessionId}${flag}`, "turn by turn: each call's decision, outcome and duration"],
    [`npx turnlog audit ${sessionId}${flag}`, "each tool call: decision, rule, who approved, outcome"],
    [`npx turnlog replay ${sessionId}${flag}`, "recompute every decision and compare with the log"],
    [`npx turnlog view ${sessionId}${flag}`, "see it in a browser: timeline, turn paths, state at any position"],
    [`npx turnlog otel ${sessionId}${flag}`, "its OpenTelemetry spans as OTLP/JSON (--endpoint sends them)"],
    [`npx turnlog verify${flag}`, "check the log's hash chains for tampering"],
    [`npx turnlog demo --pause${flag}`, "stop at the first held call and answer it yourself"],
  ];
  for (const line of commandLines(commands, paint, location, env)) print(line);
}

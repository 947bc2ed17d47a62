/**
 * What must hold after a scenario of the `kill` family, however its children were killed. Each
 * check returns the invariants it found broken, in words; none means the scenario passed.
 *
 * 1. the log verifies;
 * 2. every event any child saw acknowledged, or handed to a subscriber, is in the log, unchanged
 *    (stream, position, type, hash);
 * 3. no side effect ran twice — the local tools' (`charge`, `deploy`) nor the MCP server's (`ship`) —
 *    every effect belongs to a started call, every started side-effecting call has exactly one end
 *    (an in-doubt one `interrupted`, told to the model), and one that succeeded did its effect;
 * 4. every started call ends; none is left in doubt;
 * 5. every session ends (completed with its scripted answer, or stopped/failed with a reason),
 *    the last host said so, and it replays identical;
 * 6. what a reader printed while a host held the log is the log's own: each event it listed is
 *    the final log's event at that position (a prefix, never an event that later vanished), and
 *    its `verify` found no fault.
 */
import { readFile } from "node:fs/promises";
import { openLog } from "../../src/index.js";
import type { RecordedEvent } from "../../src/index.js";
import { killFinalAnswers, killSessionIds } from "../../test/support/kill-session-script.js";
import type { ScenarioRun } from "./scenario-run.js";

/** What a scenario exercised, summed over the run for its summary line. */
export interface ScenarioFigures {
  providerFailures: number;
  compactions: number;
  mcpShips: number;
  approvals: number;
  interrupted: number;
  rerunReads: number;
  readers: number;
}

export interface ScenarioVerdict {
  problems: string[];
  figures: ScenarioFigures;
}

const terminalToolEvents = new Set(["turn.tool.succeeded", "turn.tool.failed", "turn.tool.interrupted"]);
const sideEffectingTools = new Set(["charge", "deploy", "mcp__effects__ship"]);
const callIdOf = (event: RecordedEvent) => (event.data as { callId?: string }).callId ?? "";
const lines = async (file: string) => (await readFile(file, "utf8").catch(() => "")).split("\n").filter((line) => line !== "");
const duplicates = (values: readonly string[]) => [...new Set(values.filter((value, at) => values.indexOf(value) !== at))];

export async function checkScenario(run: ScenarioRun): Promise<ScenarioVerdict> {
  const problems: string[] = [];
  const figures: ScenarioFigures = { providerFailures: 0, compactions: 0, mcpShips: 0, approvals: 0, interrupted: 0, rerunReads: 0, readers: run.readers.length };
  const reader = await openLog({ dir: run.logDirectory });
  try {
    const verify = await reader.verify();
    if (!verify.ok) problems.push(`the log does not verify: ${JSON.stringify(verify.faults).slice(0, 500)}`);

    const events = new Map<string, RecordedEvent[]>();
    for (const sessionId of killSessionIds) events.set(sessionId, await reader.events(sessionId).catch(() => []));
    const byStream = new Map([...events].map(([sessionId, list]) => [list[0]?.meta.stream ?? `session-${sessionId}`, list]));

    // 2. Acknowledged events, and events handed to a subscriber.
    for (const [at, child] of run.runs.entries()) {
      for (const line of child.lines) {
        const [word, stream = "", position = "", type, hash] = line.split(" ");
        if (word !== "ack" && word !== "seen") continue;
        const event = byStream.get(stream)?.[Number(position) - 1];
        if (event?.type !== type || event?.meta.hash !== hash) {
          problems.push(`${child.role} run #${at}${child.kill !== undefined ? ` (killed ${child.kill})` : ""} saw ${stream}@${position} ${type} ${word === "ack" ? "acknowledged" : "handed to a subscriber"}, the log holds ${event === undefined ? "nothing" : `${event.type} ${event.meta.hash}`} there`);
        }
      }
    }

    // 3. Side effects.
    const localEffects = await lines(run.effectsFile);
    const mcpEffects = await lines(run.mcpEffectsFile);
    for (const twice of duplicates(localEffects)) problems.push(`side effect ran twice: ${twice}`);
    for (const twice of duplicates(mcpEffects)) problems.push(`MCP side effect ran twice: ship ${twice}`);
    const shippedBy = new Map<string, string>();
    for (const [sessionId, list] of events) {
      const started = list.filter((event) => event.type === "turn.tool.started");
      const startedIds = new Set(started.map(callIdOf));
      for (const event of list) {
        if (event.type !== "turn.tool_calls.planned") continue;
        for (const plan of (event.data as { plans: { callId: string; tool?: string; input?: { order?: string } }[] }).plans) {
          if (plan.tool === "mcp__effects__ship" && plan.input?.order !== undefined) shippedBy.set(plan.input.order, plan.callId);
        }
      }
      for (const effect of localEffects) {
        const [effectSession, callId = ""] = effect.split(" ");
        if (effectSession === sessionId && !startedIds.has(callId)) problems.push(`${sessionId}: the side effect of ${callId} has no turn.tool.started`);
      }
      const packets = list
        .filter((event) => event.type === "turn.results.packetized")
        .flatMap((event) => (event.data as { packets: { callId: string; ok: boolean }[] }).packets);
      for (const callId of startedIds) {
        const story = list.filter((event) => callIdOf(event) === callId && (event.type === "turn.tool.started" || terminalToolEvents.has(event.type)));
        const tool = (started.find((event) => callIdOf(event) === callId)?.data as { tool?: string }).tool ?? "";
        const types = story.map((event) => event.type);
        if (sideEffectingTools.has(tool)) {
          if (types.length !== 2 || types[0] !== "turn.tool.started" || !terminalToolEvents.has(types[1] ?? "")) problems.push(`${sessionId}: the tool events of ${tool} ${callId} are ${types.join(", ")}, not one start and one end`);
          const order = [...shippedBy].find(([, id]) => id === callId)?.[0];
          const effected = tool === "mcp__effects__ship" ? order !== undefined && mcpEffects.includes(order) : localEffects.includes(`${sessionId} ${callId}`);
          if (types[1] === "turn.tool.succeeded" && !effected) problems.push(`${sessionId}: ${tool} ${callId} succeeded without its side effect`);
          if (tool === "mcp__effects__ship" && types[1] === "turn.tool.succeeded") figures.mcpShips += 1;
        } else if (types.filter((type) => type === "turn.tool.started").length > 1) {
          figures.rerunReads += 1;
        }
        const last = types.at(-1) ?? "";
        if (!terminalToolEvents.has(last)) problems.push(`${sessionId}: ${tool} ${callId} is left in doubt (its last tool event is ${last})`);
        if (last === "turn.tool.interrupted") {
          figures.interrupted += 1;
          if (packets.find((packet) => packet.callId === callId)?.ok !== false) problems.push(`${sessionId}: ${tool} ${callId} was interrupted, and the model was not told so`);
        }
      }
      figures.providerFailures += list.filter((event) => event.type === "turn.provider.failed").length;
      figures.compactions += list.filter((event) => event.type === "session.history.compacted").length;
      figures.approvals += list.filter((event) => event.type === "turn.approval.granted").length;
    }
    for (const order of mcpEffects) {
      const callId = shippedBy.get(order);
      if (callId === undefined || !(events.get("ship") ?? []).some((event) => event.type === "turn.tool.started" && callIdOf(event) === callId)) problems.push(`ship ${order} was shipped by no started call`);
    }

    // 5. Every session ends, as the last host said, and replays identical.
    const lastHost = run.runs.findLast((child) => child.role === "host");
    for (const [sessionId, list] of events) {
      const last = list.at(-1);
      const said = lastHost?.lines.find((line) => line.startsWith(`outcome ${sessionId} `)) ?? "";
      if (last?.type === "turn.completed") {
        const text = (last.data as { text?: string }).text;
        if (text !== killFinalAnswers[sessionId as keyof typeof killFinalAnswers]) problems.push(`${sessionId} completed with "${text}", not the scripted answer`);
        if (said !== `outcome ${sessionId} completed ${text}`) problems.push(`${sessionId}: the last host said "${said}", the log says completed`);
      } else if (last?.type === "turn.stopped" || last?.type === "turn.failed") {
        const reason = (last.data as { reason?: string }).reason ?? "";
        if (!/\S/.test(reason)) problems.push(`${sessionId} ended ${last.type} without a reason`);
        if (!said.startsWith(`outcome ${sessionId} ${last.type === "turn.stopped" ? "stopped" : "failed"} `)) problems.push(`${sessionId}: the last host said "${said}", the log says ${last.type}`);
      } else {
        problems.push(`${sessionId} did not end: its last event is ${last?.type ?? "none"}`);
      }
      const replay = await reader.replay(sessionId);
      if (!replay.identical || replay.divergences.length > 0) problems.push(`${sessionId} does not replay identical: ${JSON.stringify(replay.divergences).slice(0, 500)}`);
    }

    // 6. Readers beside a host.
    for (const read of run.readers) {
      const command = `turnlog ${read.argv.join(" ")}`;
      // Before the host's first append the session may not exist yet.
      const notYet = read.code === 1 && read.stderr.includes(`no session "${read.plan.sessionId}"`);
      if (read.code !== 0 && !notYet) {
        problems.push(`${command} exited ${read.code}: ${read.stderr.trim().slice(0, 300)}`);
        continue;
      }
      if (read.code !== 0) continue;
      if (read.plan.command === "events") {
        const listed = JSON.parse(read.stdout) as RecordedEvent[];
        for (const event of listed) {
          const final = byStream.get(event.meta.stream)?.[event.meta.streamPosition - 1];
          if (final?.meta.hash !== event.meta.hash) problems.push(`${command} listed ${event.meta.stream}@${event.meta.streamPosition} ${event.type}, which the final log does not hold`);
        }
      } else if (read.plan.command === "verify") {
        const report = JSON.parse(read.stdout) as { ok: boolean; faults: unknown[] };
        if (!report.ok) problems.push(`${command} on a log a host held found faults: ${JSON.stringify(report.faults).slice(0, 300)}`);
      } else if (read.plan.command === "audit" || read.plan.command === "sessions") {
        JSON.parse(read.stdout);
      }
    }
  } finally {
    await reader.close();
  }
  return { problems, figures };
}

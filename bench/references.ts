/**
 * Each speed-up that keeps a reference beside it, timed against that reference on the same input
 * (docs/design.md#14-speed-ups-and-their-references): a recorded session of the bench scenario
 * (bench/run.ts: one user message, N tool turns of 4 calls, tool outputs of a few hundred
 * characters, then an answer) is read once into memory, and then
 *
 * - the turn machine: every turn event stepped by the compiled step (`stepTurn`,
 *   machines/provider-turn.step.ts) and by XState's pure `transition` over the machine;
 * - the projection: every event folded by one immer draft per event (`applyEvent`, the
 *   reference), by the immutable fold's draft-free path for a call's and a turn's common events
 *   (`evolveWithoutDraft`) with immer for the rest, and in place on a thawed state (`applyEventInPlace`);
 * - the request history: each build of the last 20 requests, extended from the build before
 *   (`buildNativeHistory`, history-slots.ts) and from scratch (`buildNativeHistoryFromScratch`);
 * - the staged copy of every event's data and its text: `snapshotData` (a plain copy) and
 *   `snapshotDataByJson` (JSON.stringify and JSON.parse);
 * - canonical JSON (what every hash is computed over): `canonicalJsonOf` (safe-stable-stringify)
 *   and the `canonicalize` package, over every event's data;
 * - replay's comparison of each decision event with its recomputation (here a copy): `sameJson`
 *   and `firstDifference`, what the verifier walked before for every decision;
 * - the secret rules' patterns over the realistic workload's tool outputs (bench/realistic-workload.ts,
 *   issue 35): each pattern skipped where its required literal is missing (`matchesOf`) and each run
 *   (`matchesOfReference`); and the labelled-value rule (`name=`, `name:`) found by hand
 *   (`nextLabelledValue`) and by its regular expression;
 * - the short texts the detector scans in each call of that workload (its arguments' keys and string
 *   values, the tool's name, the call's ID): with the memo of clean short texts (`redactText`) and
 *   scanned each time (`redactTextReference`);
 * - the token count of each of that workload's tool outputs: piece by piece with a cache of the
 *   pieces' counts (`countByPieces`) and `boundedCount` over gpt-tokenizer's `countTokens`.
 *
 * Each pair is timed in alternating rounds and reported as the median of the rounds (a history
 * build: the median build); the property test named beside each row checks that the two give the
 * same answer.
 *
 *   node --import tsx bench/references.ts [--turns 200] [--rounds 7]
 *   npm run bench                                     (as the step "references")
 */
import { parseArgs } from "node:util";
import canonicalize from "canonicalize";
import { initialTransition, transition } from "xstate";
import { z } from "zod";
import { providerTurnMachine, type ProviderTurnInput } from "../machines/provider-turn.machine.js";
import { startTurn, stepTurn, type ProviderTurnStep } from "../machines/provider-turn.step.js";
import type { TurnEvent } from "../src/contracts/events.js";
import { SessionFold } from "../src/core/session-fold.js";
import { buildNativeHistory, buildNativeHistoryFromScratch, type NativeHistoryOptions } from "../src/providers/format-history.js";
import { createRuntime, defineTool } from "../src/index.js";
import type { RecordedTurnlogEvent } from "../src/index.js";
import { applyEvent, applyEventInPlace } from "../src/projections/projection.js";
import { evolveWithoutDraft, sessionStateProjection, thawState, type SessionState } from "../src/projections/session-state.js";
import { MemoryEventLog, scriptedProvider } from "../src/testing/index.js";
import type { ScriptStep } from "../src/testing/index.js";
import { canonicalJsonOf } from "../src/util/canonical-json.js";
import { firstDifference, sameJson } from "../src/util/first-difference.js";
import { isDecisionEvent } from "../src/contracts/events.js";
import { snapshotData, snapshotDataByJson } from "../src/log/event-recording.js";
import { matchesOf, matchesOfReference } from "../src/policy/secrets/pattern-matches.js";
import { labelledValuePattern, nextLabelledValue } from "../src/policy/secrets/labelled-values.js";
import { createSecretRedactor, redactTextReference } from "../src/policy/secrets/secret-detector.js";
import { KnownSecrets, scannedPatterns } from "../src/policy/secrets/secret-patterns.js";
import { countTokens } from "gpt-tokenizer/encoding/o200k_base";
import { boundedCount, countByPieces } from "../src/history/token-estimator.js";
import { realisticScript } from "./realistic-workload.js";
import { median, printRows, recordResult } from "./results.js";

const { values: options } = parseArgs({
  options: {
    turns: { type: "string", default: "200" },
    rounds: { type: "string", default: "7" },
  },
});
const turns = Number(options.turns);
const rounds = Number(options.rounds);
const callsPerTurn = 4;
/** The requests whose history is built both ways: the last ones, where a session is longest. */
const lastRequests = 20;

const read = defineTool({
  name: "read",
  description: "returns a few hundred characters",
  risk: "read-only-local",
  input: z.object({ path: z.string() }),
  run: ({ path }) => `contents of ${path}\n${"a line of a source file, as a read would return it;\n".repeat(8)}`,
});

async function recordSession(): Promise<RecordedTurnlogEvent[]> {
  const steps: ScriptStep[] = [];
  for (let turn = 0; turn < turns; turn += 1) {
    steps.push({
      content: turn % 10 === 0 ? "Let me look at a few more files." : "",
      toolCalls: Array.from({ length: callsPerTurn }, (_, index) => ({ name: "read", arguments: JSON.stringify({ path: `src/module-${turn}-${index}.ts` }) })),
    });
  }
  steps.push({ content: "done" });
  const log = new MemoryEventLog();
  const runtime = await createRuntime({
    log,
    provider: scriptedProvider(steps),
    tools: [read],
    budgets: { maxIterations: turns + 1, maxToolCalls: turns * callsPerTurn + 1 },
  });
  const session = await runtime.openSession("references");
  const outcome = await session.send("Read the project's modules and tell me what they do.");
  if (outcome.status !== "completed") throw new Error(`bench session ended ${outcome.status}`);
  const events = [...(await runtime.events("references"))];
  await runtime.close();
  return events;
}

/** The seconds one run of `work` takes. */
function timeOnce(work: () => void): number {
  const began = process.hrtime.bigint();
  work();
  return Number(process.hrtime.bigint() - began) / 1e9;
}

/** Runs each of `works` once per round, in turn, and returns the median seconds of each. */
function timeRounds(...works: (() => void)[]): number[] {
  const times = works.map(() => [] as number[]);
  // One untimed round each, so every side is compiled before it is timed.
  for (const work of works) work();
  for (let round = 0; round < rounds; round += 1) {
    for (const [index, work] of works.entries()) times[index]?.push(timeOnce(work));
  }
  return times.map((seconds) => median(seconds));
}

/** The median seconds of a reference and the speed-up that keeps it. */
function timePair(reference: () => void, fast: () => void): { reference: number; fast: number } {
  const [referenceSeconds = NaN, fastSeconds = NaN] = timeRounds(reference, fast);
  return { reference: referenceSeconds, fast: fastSeconds };
}

const events = await recordSession();
const rows: string[][] = [];
const µs = (seconds: number, count: number) => `${((seconds / count) * 1e6).toFixed(2)} µs`;
const report = (id: string, what: string, count: number, unit: string, timed: { reference: number; fast: number }, names: [string, string], property: string) => {
  const factor = timed.reference / timed.fast;
  rows.push([`${what}: ${names[0]} (reference)`, `${µs(timed.reference, count)} per ${unit}`]);
  rows.push([`  ${names[1]}`, `${µs(timed.fast, count)} per ${unit}, ${factor.toFixed(1)}× faster (${property})`]);
  recordResult(`references.${id}.reference`, `${what}: ${names[0]}`, (timed.reference / count) * 1e6, "µs");
  recordResult(`references.${id}.fast`, `${what}: ${names[1]}`, (timed.fast / count) * 1e6, "µs");
};

// The turn machine: each turn's events with the input its turn.started gave the machine.
{
  const fold = new SessionFold({ mutable: true });
  const turnsOfSession: { input: ProviderTurnInput; events: TurnEvent[] }[] = [];
  for (const recorded of events) {
    fold.apply(recorded);
    if (recorded.type === "turn.started") {
      const data = recorded.data as { turnId: string; turnSeq: number; iteration: number };
      const input = { turnId: data.turnId, turnSeq: data.turnSeq, iteration: data.iteration, maxAttempts: fold.state.provider?.maxAttempts ?? 1, decisionsVersion: fold.state.decisionsVersion };
      turnsOfSession.push({ input, events: [] });
    } else if (recorded.type.startsWith("turn.")) turnsOfSession.at(-1)?.events.push({ type: recorded.type, data: recorded.data } as TurnEvent);
  }
  const stepped = turnsOfSession.reduce((sum, turn) => sum + turn.events.length, 0);
  const timed = timePair(
    () => {
      for (const turn of turnsOfSession) {
        let [snapshot] = initialTransition(providerTurnMachine, turn.input);
        for (const event of turn.events) [snapshot] = transition(providerTurnMachine, snapshot, event);
        if (snapshot.status !== "done") throw new Error("XState did not end the turn");
      }
    },
    () => {
      for (const turn of turnsOfSession) {
        let state: ProviderTurnStep | undefined = startTurn(turn.input);
        for (const event of turn.events) state = state === undefined ? undefined : stepTurn(state, event);
        if (state === undefined || !state.done) throw new Error("the compiled step did not end the turn");
      }
    },
  );
  report("turnMachine", `turn machine, ${stepped} turn events`, stepped, "event", timed, ["XState transition", "compiled stepTurn"], "property-tests/provider-turn-step.test.ts");
}

// The projection, three ways.
{
  const draftPerEvent = () => {
    let state = sessionStateProjection.initialState();
    for (const event of events) state = applyEvent(sessionStateProjection, state, event);
  };
  const draftFree = () => {
    let state = sessionStateProjection.initialState();
    for (const event of events) state = evolveWithoutDraft(state, event) ?? applyEvent(sessionStateProjection, state, event);
  };
  const thawed = () => {
    const inPlace = thawState(sessionStateProjection.initialState());
    for (const event of events) applyEventInPlace(sessionStateProjection, inPlace, event);
  };
  const label = `projection, ${events.length} events`;
  const [reference = NaN, fastPath = NaN, whole = NaN] = timeRounds(draftPerEvent, draftFree, thawed);
  report("foldFastPath", label, events.length, "event", { reference, fast: fastPath }, ["an immer draft per event", "draft-free call and turn events (evolveWithoutDraft)"], "property-tests/fold-in-place.test.ts");
  report("foldInPlace", label, events.length, "event", { reference, fast: whole }, ["an immer draft per event", "in place on a thawed state"], "property-tests/fold-in-place.test.ts");
}

// The request history at the last requests of the session, as the live fold builds it.
{
  const states: SessionState[] = [];
  const fold = new SessionFold();
  for (const recorded of events) {
    fold.apply(recorded);
    if (recorded.type === "turn.provider.requested") states.push(fold.state);
  }
  const provider = fold.state.provider ?? { id: "scripted", format: "openai-chat" as const };
  const historyOptions: NativeHistoryOptions = { format: provider.format, provider: { id: provider.id, format: provider.format }, maxTokens: 100_000 };
  // The slots are kept from one build to the next: build every request before the timed ones, in order.
  for (const state of states.slice(0, -lastRequests)) buildNativeHistory(state, historyOptions);
  // Each build is timed alone and the median taken: one garbage collection inside a build would
  // otherwise outweigh twenty builds.
  const timed = states.slice(-lastRequests);
  const extended: number[] = [];
  for (const state of timed) extended.push(timeOnce(() => buildNativeHistory(state, historyOptions)));
  const scratch: number[] = [];
  for (let round = 0; round < rounds; round += 1) for (const state of timed) scratch.push(timeOnce(() => buildNativeHistoryFromScratch(state, historyOptions)));
  report("history", `request history, the last ${timed.length} of ${states.length} requests`, 1, "build", { reference: median(scratch), fast: median(extended) }, ["built from scratch", "extended from the last build (history-slots.ts)"], "property-tests/incremental-history.test.ts");
}

// Canonical JSON over every event's data.
{
  const values = events.map((event) => event.data);
  const timed = timePair(
    () => {
      for (const value of values) canonicalize(value);
    },
    () => {
      for (const value of values) canonicalJsonOf(value);
    },
  );
  report("canonicalJson", `canonical JSON, ${values.length} events' data`, values.length, "event", timed, ["the canonicalize package", "canonicalJsonOf (safe-stable-stringify)"], "property-tests/canonical-json.test.ts");
}

// Replay's comparison of each decision event with what the code recomputed: equal, as almost
// every one is (the recomputed one a copy, as the log's JSON and the recomputation are).
{
  const pairs = events.filter((event) => isDecisionEvent(event.type)).map((event) => [{ type: event.type, data: event.data }, JSON.parse(JSON.stringify({ type: event.type, data: event.data })) as unknown] as const);
  const timed = timePair(
    () => {
      for (const [logged, recomputed] of pairs) if (firstDifference(logged, recomputed) !== undefined) throw new Error("a copy differs");
    },
    () => {
      for (const [logged, recomputed] of pairs) if (!sameJson(logged, recomputed)) throw new Error("a copy differs");
    },
  );
  report("replayComparison", `replay's comparison of ${pairs.length} equal decision events`, pairs.length, "event", timed, ["firstDifference", "sameJson"], "property-tests/first-difference.test.ts");
}

// The copy a staged event's data is folded and appended as (eventDataSnapshot), over every event's data.
{
  const values = events.map((event) => JSON.parse(JSON.stringify(event.data)) as unknown);
  const timed = timePair(
    () => {
      for (const value of values) snapshotDataByJson(value, "event");
    },
    () => {
      for (const value of values) snapshotData(value, "event");
    },
  );
  report("dataCopy", `staged copy and text, ${values.length} events' data`, values.length, "event", timed, ["JSON.stringify and JSON.parse", "a plain copy, its text written from it (snapshotData)"], "property-tests/event-data-copy.test.ts");
}

// The secret rules over realistic tool outputs, and the short texts of realistic calls.
{
  const calls = realisticScript(turns).flat();
  const outputs = calls.map((call) => call.output);
  const timed = timePair(
    () => {
      for (const output of outputs) for (const pattern of scannedPatterns) for (const match of matchesOfReference(output, pattern)) void match;
    },
    () => {
      for (const output of outputs) for (const pattern of scannedPatterns) for (const match of matchesOf(output, pattern)) void match;
    },
  );
  report("secretPrefilter", `the secret rules' ${scannedPatterns.length} patterns over ${outputs.length} realistic tool outputs`, outputs.length, "output", timed, ["every pattern run", "skipped without its required literal (matchesOf)"], "property-tests/secret-pattern-prefilter.test.ts");

  const labelled = timePair(
    () => {
      for (const output of outputs) for (const match of output.matchAll(labelledValuePattern)) void match;
    },
    () => {
      for (const output of outputs) for (let match = nextLabelledValue(output, 0); match !== undefined; match = nextLabelledValue(output, match.end)) void match;
    },
  );
  report("labelledValues", `the labelled-value rule (\`name=\`, \`name:\`) over ${outputs.length} realistic tool outputs`, outputs.length, "output", labelled, ["its regular expression", "found by hand (nextLabelledValue)"], "property-tests/labelled-values.test.ts");

  const shortTexts = calls.flatMap((call) => {
    const parsed = JSON.parse(call.arguments) as Record<string, unknown>;
    return [call.id, call.tool, ...Object.keys(parsed), ...Object.values(parsed).filter((value): value is string => typeof value === "string")];
  });
  // Each run with a memo of its own, empty at the start (the memo is kept per set of host secrets,
  // so a redactor made for the run has a fresh one), as one session's calls meet it.
  let runs = 0;
  const hostSecret = () => `bench-known-secret-${(runs += 1)}`;
  const memo = timePair(
    () => {
      const known = new KnownSecrets([hostSecret()]);
      for (const text of shortTexts) redactTextReference(text, known);
    },
    () => {
      const redactor = createSecretRedactor({ secrets: [hostSecret()] });
      for (const text of shortTexts) redactor.redactText(text);
    },
  );
  report("secretMemo", `secret scan of the ${shortTexts.length} short texts of ${calls.length} realistic calls`, calls.length, "call", memo, ["scanned each time (redactTextReference)", "clean short texts remembered, from an empty memo (redactText)"], "property-tests/secret-redaction.test.ts");
}

// Token counting of the realistic tool outputs, as the history budget counts each once.
{
  const outputs = realisticScript(turns).flat().map((call) => call.output);
  const encoderCount = (text: string) => countTokens(text, { disallowedSpecial: new Set() });
  const timed = timePair(
    () => {
      for (const output of outputs) boundedCount(output, encoderCount);
    },
    () => {
      for (const output of outputs) countByPieces(output);
    },
  );
  report("tokenCount", `token count of ${outputs.length} realistic tool outputs`, outputs.length, "output", timed, ["boundedCount over gpt-tokenizer's countTokens", "piece by piece, counts of pieces cached (countByPieces)"], "property-tests/token-counting.test.ts");
}

console.log(`speed-ups against their references: a session of ${turns} turns × ${callsPerTurn} calls, ${events.length} events, median of ${rounds} rounds`);
printRows(rows);

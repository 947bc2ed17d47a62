/**
 * Model-based tests of the event log: random sequences of appends (some with wrong expected
 * versions, some racing each other), reads, existence checks, listings, verifies and reopens,
 * run against a real backend and against a plain model (a Map of arrays). Any difference fails.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  ExpectedVersionConflictError,
  NO_CONCURRENCY_CHECK,
  STREAM_DOES_NOT_EXIST,
  STREAM_EXISTS,
} from "../src/errors/expected-version-conflict-error.js";
import type { ExpectedStreamVersion } from "../src/errors/expected-version-conflict-error.js";
import type { AppendResult, EventLog, ReadStreamOptions, RecordedEvent } from "../src/log/event-log.js";
import { LevelEventLog } from "../src/log/level/level-event-log.js";
import { MemoryEventLog } from "../src/log/memory-event-log.js";
import { PostgresEventLog } from "../src/log/postgres/postgres-event-log.js";
import { dropSchema, freshSchemaName, postgresUrl } from "../test/support/postgres.js";

interface ModelEvent {
  type: string;
  data: unknown;
  stream: string;
  streamPosition: number;
  globalPosition: number;
  hash: string;
}

/** What the log should hold: every event in global order, and each stream's events. */
interface Model {
  all: ModelEvent[];
  streams: Map<string, ModelEvent[]>;
}

/** The system under test; `reopen` (LevelDB only) closes the log and opens its directory again. */
interface Real {
  log: EventLog;
  reopen?: () => Promise<void>;
}

type LogCommand = fc.AsyncCommand<Model, Real>;

/** How a command picks its expected version, resolved against the model when it runs. */
type ExpectedChoice =
  | { kind: "omitted" }
  | { kind: "sentinel"; value: typeof STREAM_EXISTS | typeof STREAM_DOES_NOT_EXIST | typeof NO_CONCURRENCY_CHECK }
  | { kind: "current" }
  | { kind: "wrong"; offset: number };

interface AppendSpec {
  stream: string;
  events: Array<{ type: string; data: unknown }>;
  expected: ExpectedChoice;
}

function versionOf(model: Model, stream: string): number {
  return model.streams.get(stream)?.length ?? 0;
}

function resolveExpected(model: Model, spec: AppendSpec): ExpectedStreamVersion | undefined {
  const version = versionOf(model, spec.stream);
  switch (spec.expected.kind) {
    case "omitted":
      return undefined;
    case "sentinel":
      return spec.expected.value;
    case "current":
      return version;
    case "wrong":
      return version + spec.expected.offset >= 0 ? version + spec.expected.offset : version - spec.expected.offset;
  }
}

function expectationHolds(expected: ExpectedStreamVersion | undefined, version: number): boolean {
  if (expected === undefined || expected === NO_CONCURRENCY_CHECK) return true;
  if (expected === STREAM_EXISTS) return version > 0;
  if (expected === STREAM_DOES_NOT_EXIST) return version === 0;
  return expected === version;
}

/**
 * Applies one append to the model given the real outcome, asserting that the outcome is the one
 * the model predicts: a conflict carrying the model's version, or the model's positions.
 */
function applyAppend(
  model: Model,
  spec: AppendSpec,
  expected: ExpectedStreamVersion | undefined,
  outcome: PromiseSettledResult<AppendResult>,
): void {
  const version = versionOf(model, spec.stream);
  if (!expectationHolds(expected, version)) {
    expect(outcome.status).toBe("rejected");
    const error: unknown = outcome.status === "rejected" ? outcome.reason : undefined;
    expect(ExpectedVersionConflictError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ stream: spec.stream, current: version, expected: expected ?? NO_CONCURRENCY_CHECK });
    return;
  }
  if (outcome.status === "rejected") throw outcome.reason;
  const events = model.streams.get(spec.stream) ?? [];
  let prevHash = events[events.length - 1]?.hash ?? "";
  expect(outcome.value.events.length).toBe(spec.events.length);
  for (const [index, event] of spec.events.entries()) {
    const recorded = outcome.value.events[index];
    const modelEvent: ModelEvent = {
      type: event.type,
      data: JSON.parse(JSON.stringify(event.data)) as unknown,
      stream: spec.stream,
      streamPosition: events.length + 1,
      globalPosition: model.all.length + 1,
      hash: recorded?.meta.hash ?? "",
    };
    expect(recorded?.meta.prevHash).toBe(prevHash);
    expect(project(recorded)).toEqual(modelEvent);
    prevHash = modelEvent.hash;
    events.push(modelEvent);
    model.all.push(modelEvent);
  }
  model.streams.set(spec.stream, events);
  expect(outcome.value).toMatchObject({ nextExpectedStreamVersion: events.length, lastGlobalPosition: model.all.length });
}

function project(event: RecordedEvent | undefined): ModelEvent | undefined {
  if (event === undefined) return undefined;
  const { type, data, meta } = event;
  return {
    type,
    data,
    stream: meta.stream,
    streamPosition: meta.streamPosition,
    globalPosition: meta.globalPosition,
    hash: meta.hash,
  };
}

/** The model's answer to readStream, written plainly rather than by window arithmetic. */
function modelReadStream(model: Model, stream: string, options: ReadStreamOptions): ModelEvent[] {
  const events = model.streams.get(stream) ?? [];
  const backwards = options.direction === "backwards";
  const low = (backwards ? options.to : options.from) ?? 1;
  const high = (backwards ? options.from : options.to) ?? Number.POSITIVE_INFINITY;
  const inWindow = events.filter((event) => event.streamPosition >= low && event.streamPosition <= high);
  const ordered = backwards ? inWindow.reverse() : inWindow;
  return ordered.slice(0, options.maxCount ?? Number.POSITIVE_INFINITY);
}

function describeSpec(spec: AppendSpec): string {
  return `${spec.stream}+${spec.events.length}@${JSON.stringify(spec.expected)}`;
}

class AppendCommand implements LogCommand {
  constructor(readonly spec: AppendSpec) {}
  check(): boolean {
    return true;
  }
  async run(model: Model, real: Real): Promise<void> {
    const expected = resolveExpected(model, this.spec);
    const options = expected === undefined ? {} : { expectedStreamVersion: expected };
    const [outcome] = await Promise.allSettled([real.log.appendToStream(this.spec.stream, this.spec.events, options)]);
    applyAppend(model, this.spec, expected, outcome!);
  }
  toString(): string {
    return `append(${describeSpec(this.spec)})`;
  }
}

/** Appends started together without waiting: the backend may group-commit them. */
class RacingAppendsCommand implements LogCommand {
  constructor(readonly specs: AppendSpec[]) {}
  check(): boolean {
    return true;
  }
  async run(model: Model, real: Real): Promise<void> {
    // Expectations are resolved against the model before any append, as racing callers would.
    const expectations = this.specs.map((spec) => resolveExpected(model, spec));
    const outcomes = await Promise.allSettled(
      this.specs.map((spec, index) => {
        const expected = expectations[index];
        return real.log.appendToStream(spec.stream, spec.events, expected === undefined ? {} : { expectedStreamVersion: expected });
      }),
    );
    this.specs.forEach((spec, index) => applyAppend(model, spec, expectations[index], outcomes[index]!));
  }
  toString(): string {
    return `race(${this.specs.map(describeSpec).join(", ")})`;
  }
}

class ReadStreamCommand implements LogCommand {
  constructor(
    readonly stream: string,
    readonly options: ReadStreamOptions,
  ) {}
  check(): boolean {
    return true;
  }
  async run(model: Model, real: Real): Promise<void> {
    const events = await real.log.readStream(this.stream, this.options);
    expect(events.map(project)).toEqual(modelReadStream(model, this.stream, this.options));
  }
  toString(): string {
    return `readStream(${this.stream}, ${JSON.stringify(this.options)})`;
  }
}

class ReadAllCommand implements LogCommand {
  constructor(
    readonly after: number | undefined,
    readonly limit: number | undefined,
  ) {}
  check(): boolean {
    return true;
  }
  async run(model: Model, real: Real): Promise<void> {
    const options = { ...(this.after === undefined ? {} : { after: this.after }), ...(this.limit === undefined ? {} : { limit: this.limit }) };
    const events: RecordedEvent[] = [];
    for await (const event of real.log.readAll(options)) events.push(event);
    const expected = model.all.slice(this.after ?? 0, (this.after ?? 0) + (this.limit ?? Number.POSITIVE_INFINITY));
    expect(events.map(project)).toEqual(expected);
  }
  toString(): string {
    return `readAll(after ${String(this.after)}, limit ${String(this.limit)})`;
  }
}

class StreamExistsCommand implements LogCommand {
  constructor(readonly stream: string) {}
  check(): boolean {
    return true;
  }
  async run(model: Model, real: Real): Promise<void> {
    expect(await real.log.streamExists(this.stream)).toBe(versionOf(model, this.stream) > 0);
    expect(await real.log.streamVersion(this.stream)).toBe(versionOf(model, this.stream));
  }
  toString(): string {
    return `streamExists(${this.stream})`;
  }
}

class ListStreamsCommand implements LogCommand {
  check(): boolean {
    return true;
  }
  async run(model: Model, real: Real): Promise<void> {
    expect(await real.log.listStreams()).toEqual([...model.streams.keys()].sort());
  }
  toString(): string {
    return "listStreams()";
  }
}

class VerifyCommand implements LogCommand {
  check(): boolean {
    return true;
  }
  async run(model: Model, real: Real): Promise<void> {
    expect(await real.log.verify()).toEqual({ ok: true, checked: model.all.length });
  }
  toString(): string {
    return "verify()";
  }
}

class ReopenCommand implements LogCommand {
  check(): boolean {
    return true;
  }
  async run(_model: Model, real: Real): Promise<void> {
    await real.reopen?.();
  }
  toString(): string {
    return "reopen()";
  }
}

const streamName = fc.constantFrom("a", "b", "a!b", "ü/ß");
const appendSpec: fc.Arbitrary<AppendSpec> = fc.record({
  stream: streamName,
  events: fc.array(
    fc.record({ type: fc.constantFrom("thing.happened", "other.thing.done"), data: fc.jsonValue({ maxDepth: 2 }) }),
    { minLength: 1, maxLength: 3 },
  ),
  expected: fc.oneof(
    fc.constant<ExpectedChoice>({ kind: "omitted" }),
    fc.constantFrom(STREAM_EXISTS, STREAM_DOES_NOT_EXIST, NO_CONCURRENCY_CHECK).map((value): ExpectedChoice => ({ kind: "sentinel", value })),
    fc.constant<ExpectedChoice>({ kind: "current" }),
    fc.constantFrom(-2, -1, 1, 2).map((offset): ExpectedChoice => ({ kind: "wrong", offset })),
  ),
});
const optionalPosition = fc.option(fc.integer({ min: 0, max: 12 }), { nil: undefined });
const readStreamOptions: fc.Arbitrary<ReadStreamOptions> = fc.record(
  {
    from: optionalPosition,
    to: optionalPosition,
    maxCount: optionalPosition,
    direction: fc.constantFrom<"forwards" | "backwards">("forwards", "backwards"),
  },
  { requiredKeys: [] },
);

function commandArbitraries(withReopen: boolean): Array<fc.Arbitrary<LogCommand>> {
  // Appends are listed three times so that streams grow long enough for windows to matter.
  return [
    appendSpec.map((spec) => new AppendCommand(spec)),
    appendSpec.map((spec) => new AppendCommand(spec)),
    appendSpec.map((spec) => new AppendCommand(spec)),
    fc.array(appendSpec, { minLength: 2, maxLength: 4 }).map((specs) => new RacingAppendsCommand(specs)),
    fc.tuple(streamName, readStreamOptions).map(([stream, options]) => new ReadStreamCommand(stream, options)),
    fc
      .tuple(fc.option(fc.integer({ min: 0, max: 12 }), { nil: undefined }), fc.option(fc.integer({ min: 0, max: 6 }), { nil: undefined }))
      .map(([after, limit]) => new ReadAllCommand(after, limit)),
    streamName.map((stream) => new StreamExistsCommand(stream)),
    fc.constant(new ListStreamsCommand()),
    fc.constant(new VerifyCommand()),
    ...(withReopen ? [fc.constant(new ReopenCommand())] : []),
  ];
}

function emptyModel(): Model {
  return { all: [], streams: new Map() };
}

describe("the event log against a model", () => {
  it("LevelEventLog does what a Map of arrays does", async () => {
    await fc.assert(
      fc.asyncProperty(fc.commands(commandArbitraries(true), { maxCommands: 50, size: "max" }), async (commands) => {
        const directory = await mkdtemp(path.join(tmpdir(), "turnlog-log-model-"));
        const real: Real = { log: await LevelEventLog.open(directory, { durability: "relaxed" }) };
        real.reopen = async () => {
          await real.log.close();
          real.log = await LevelEventLog.open(directory, { durability: "relaxed" });
        };
        try {
          await fc.asyncModelRun(() => ({ model: emptyModel(), real }), commands);
        } finally {
          await real.log.close();
          await rm(directory, { recursive: true, force: true });
        }
      }),
      { numRuns: 100 },
    );
  });

  it("MemoryEventLog does what a Map of arrays does", async () => {
    await fc.assert(
      fc.asyncProperty(fc.commands(commandArbitraries(false), { maxCommands: 50, size: "max" }), async (commands) => {
        const real: Real = { log: new MemoryEventLog() };
        await fc.asyncModelRun(() => ({ model: emptyModel(), real }), commands);
      }),
      { numRuns: 200 },
    );
  });

  // Against a real server, one schema per run; reopening closes the handle and opens another on
  // the same tables.
  it.runIf(postgresUrl !== undefined)("PostgresEventLog does what a Map of arrays does", async () => {
    const url = postgresUrl ?? "";
    await fc.assert(
      fc.asyncProperty(fc.commands(commandArbitraries(true), { maxCommands: 40, size: "max" }), async (commands) => {
        const schema = freshSchemaName("model");
        const real: Real = { log: await PostgresEventLog.open(url, { schema, poolSize: 4 }) };
        real.reopen = async () => {
          await real.log.close();
          real.log = await PostgresEventLog.open(url, { schema, poolSize: 4 });
        };
        try {
          await fc.asyncModelRun(() => ({ model: emptyModel(), real }), commands);
        } finally {
          await real.log.close();
          await dropSchema(schema);
        }
      }),
      { numRuns: 40 },
    );
  }, 240_000);
});

import { randomUUID } from "node:crypto";
import type { Clock, EventToAppend, IdSource, RecordedEvent, RecordedEventMeta } from "./event-log.js";
import { computeRecordedEventHash } from "./hash-chain.js";
import { canonicalJsonOf, hasLoneSurrogateEscape } from "../util/canonical-json.js";
import type { StreamHead } from "./hash-chain.js";
import type { StreamTimes } from "./recorded-time.js";

/** The clock a log uses when none is injected: the system's wall time and `performance.now()`. */
export const systemClock: Clock = { now: () => Date.now(), monotonic: () => performance.now() };

/** The ID source a log uses when none is injected. */
export const randomIds: IdSource = { next: () => randomUUID() };

/**
 * An event checked and snapshotted at the moment `appendToStream` was called: its data is the
 * JSON form of what the caller passed, so later mutation of the caller's object cannot change
 * what is stored, and every backend stores (and hashes) exactly what it will read back.
 */
export interface PreparedEvent {
  type: string;
  data: unknown;
  /** `JSON.stringify(data)`, kept from the copy so the stored form need not write it again. */
  json: string;
  eventId: string | undefined;
  causationId: string | undefined;
  schemaVersion: number;
  /** `metadata.recordedBeforeMs`: how long before the append's time the event is recorded (0: at it). */
  recordedBeforeMs: number;
}

/** Checks `AppendOptions.recordedAt`: undefined, or a time a `Date` can write as ISO 8601. */
export function assertRecordedAt(value: unknown): asserts value is number | undefined {
  if (value === undefined) return;
  if (typeof value !== "number" || !Number.isFinite(value) || Number.isNaN(new Date(value).getTime())) {
    throw new TypeError(`recordedAt must be a time in milliseconds since the epoch, got ${describe(value)}`);
  }
}

/** Throws a `TypeError` for a stream name no backend can store. */
export function assertStreamName(stream: unknown): asserts stream is string {
  if (typeof stream !== "string" || stream.length === 0) {
    throw new TypeError(`a stream name must be a non-empty string, got ${describe(stream)}`);
  }
  if (canonicalizeOrUndefined(stream) === undefined) {
    throw new TypeError("a stream name must be valid Unicode (it contains a lone surrogate)");
  }
}

/** Validates and snapshots the events of one append; a bad event is the caller's `TypeError`. */
export function prepareEvents(events: readonly EventToAppend[]): PreparedEvent[] {
  if (!Array.isArray(events)) {
    throw new TypeError(`appendToStream takes an array of events, got ${describe(events)}`);
  }
  const prepared = events.map((event: EventToAppend, index) => prepareEvent(event, index));
  prepared.forEach((event, index) => {
    const before = prepared[index - 1];
    if (before !== undefined && event.recordedBeforeMs > before.recordedBeforeMs) {
      throw new TypeError(`event ${index} would be recorded before the event ahead of it (recordedBeforeMs ${event.recordedBeforeMs} > ${before.recordedBeforeMs})`);
    }
  });
  return prepared;
}

function prepareEvent(event: EventToAppend, index: number): PreparedEvent {
  if (typeof event !== "object" || event === null) {
    throw new TypeError(`event ${index} must be an object, got ${describe(event)}`);
  }
  if (typeof event.type !== "string" || event.type.length === 0) {
    throw new TypeError(`event ${index} must have a non-empty string type, got ${describe(event.type)}`);
  }
  const { data, json } = takeSnapshot(event.data) ?? snapshotData(event.data, `event ${index} (${event.type})`);
  if (hasLoneSurrogateEscape(JSON.stringify(event.type))) {
    throw new TypeError(`event ${index} (${event.type}) contains a string that is not valid Unicode`);
  }
  const metadata = event.metadata ?? {};
  if (typeof metadata !== "object" || metadata === null) {
    throw new TypeError(`event ${index} has metadata that is not an object`);
  }
  const { eventId, causationId, schemaVersion, recordedBeforeMs } = metadata;
  if (eventId !== undefined && (typeof eventId !== "string" || eventId.length === 0)) {
    throw new TypeError(`event ${index} has an eventId that is not a non-empty string`);
  }
  if (causationId !== undefined && typeof causationId !== "string") {
    throw new TypeError(`event ${index} has a causationId that is not a string`);
  }
  if (schemaVersion !== undefined && !(Number.isSafeInteger(schemaVersion) && schemaVersion >= 1)) {
    throw new TypeError(`event ${index} has a schemaVersion that is not a positive integer`);
  }
  if (recordedBeforeMs !== undefined && !(Number.isSafeInteger(recordedBeforeMs) && recordedBeforeMs >= 0)) {
    throw new TypeError(`event ${index} has a recordedBeforeMs that is not a whole number of milliseconds ≥ 0`);
  }
  return { type: event.type, data, json, eventId, causationId, schemaVersion: schemaVersion ?? 1, recordedBeforeMs: recordedBeforeMs ?? 0 };
}

/**
 * Event data already in the form an append stores (see `eventDataSnapshot`), with its JSON text
 * until an append takes it: an append takes the data as it is instead of writing it as JSON and
 * reading it back a second time, and stores the text it was read from.
 */
const dataSnapshots = new WeakMap<object, string | undefined>();

/** The snapshot and its JSON text, when `data` is one (the text is handed out once, then dropped). */
function takeSnapshot(data: unknown): { data: unknown; json: string } | undefined {
  if (typeof data !== "object" || data === null || !dataSnapshots.has(data)) return undefined;
  const json = dataSnapshots.get(data) ?? JSON.stringify(data);
  // Not kept for the life of the data (a state holds it as long as the session is open).
  dataSnapshots.set(data, undefined);
  return { data, json };
}

/**
 * The form `appendToStream` stores `data` in — its JSON form (undefined members gone), checked to
 * be valid Unicode — deeply frozen, so it can be folded now and appended later without being
 * copied again: an append recognizes it and skips its own copy. The session store stages each
 * decision's events this way (docs/performance.md#what-makes-a-tool-call-cheap-issue-15: the copy was a tenth of an append's CPU). Throws the
 * `TypeError` the append would throw.
 *
 * @example
 * const data = eventDataSnapshot({ a: 1, b: undefined }, "x.happened"); // { a: 1 }, frozen
 */
export function eventDataSnapshot(data: unknown, type: string): unknown {
  if (typeof data === "object" && data !== null && dataSnapshots.has(data)) return data;
  const snapshot = snapshotData(data, `event ${type}`);
  if (typeof snapshot.data === "object" && snapshot.data !== null) dataSnapshots.set(deepFreeze(snapshot.data), snapshot.json);
  return snapshot.data;
}

/**
 * A copy of `data` in its JSON form (what `JSON.parse(JSON.stringify(data))` gives), and its JSON
 * text; a `TypeError` naming `what` for data no backend can store. The text is what
 * `JSON.stringify` writes for the copy, so it stands for the copy in the stored form.
 *
 * Plain data (what the runtime builds: plain objects, arrays, strings, finite numbers, booleans,
 * null) is copied by `plainJsonCopy`, deeply frozen, instead of being parsed back from its text:
 * `JSON.parse` allocated every string again, each tool output twice per call
 * (docs/performance.md#realistic-calls-issue-35). Anything else takes the JSON round trip,
 * `snapshotDataByJson`, the reference: property-tests/event-data-copy.test.ts shows both give the
 * same data, text and refusals for any value.
 */
export function snapshotData(data: unknown, what: string): { data: unknown; json: string } {
  let copy: unknown;
  try {
    copy = plainJsonCopy(data, 0);
  } catch {
    // A getter that throws: the round trip meets it again and says so as an append would.
    copy = notPlain;
  }
  if (copy === notPlain) return snapshotDataByJson(data, what);
  const json = JSON.stringify(copy) as string;
  // JSON.stringify lets lone surrogates through (escaped); RFC 8785 (and so the hash) does not.
  if (hasLoneSurrogateEscape(json)) {
    throw new TypeError(`${what} contains a string that is not valid Unicode`);
  }
  return { data: copy, json };
}

/** `snapshotData` by `JSON.stringify` and `JSON.parse`: the reference, and the way for data that is not plain. */
export function snapshotDataByJson(data: unknown, what: string): { data: unknown; json: string } {
  let json: string | undefined;
  try {
    json = JSON.stringify(data);
  } catch (error) {
    throw new TypeError(`${what} has data that cannot be written as JSON`, { cause: error });
  }
  if (json === undefined) {
    throw new TypeError(`${what} has data that cannot be written as JSON: ${describe(data)}`);
  }
  // JSON.stringify lets lone surrogates through (escaped); RFC 8785 (and so the hash) does not.
  if (hasLoneSurrogateEscape(json)) {
    throw new TypeError(`${what} contains a string that is not valid Unicode`);
  }
  return { data: JSON.parse(json) as unknown, json };
}

/** What `plainJsonCopy` returns for a value it leaves to the JSON round trip. */
const notPlain: unique symbol = Symbol("not plain JSON");

/** Past this depth a value is left to the JSON round trip (a cycle, or a pathological value). */
const maxPlainCopyDepth = 64;

/**
 * A deeply frozen copy of `value` equal to `JSON.parse(JSON.stringify(value))` — keys in the same
 * order, `-0` written as `0`, strings shared (they are immutable) — when `value` is made only of
 * null, booleans, finite numbers, strings, arrays without holes and objects whose prototype is
 * `Object.prototype` or null, without a `toJSON` method, an `undefined`, function, symbol or bigint
 * inside, or a `"__proto__"` key (which an assignment would take for the prototype); otherwise
 * `notPlain`. Written here because no maintained library copies JSON data this way (structuredClone
 * keeps what JSON drops and copies strings).
 */
function plainJsonCopy(value: unknown, depth: number): unknown {
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      if (!Number.isFinite(value)) return notPlain;
      return value === 0 ? 0 : value;
    case "object": {
      if (value === null) return null;
      if (depth >= maxPlainCopyDepth || typeof (value as { toJSON?: unknown }).toJSON === "function") return notPlain;
      if (Array.isArray(value)) {
        const copy: unknown[] = [];
        for (let index = 0; index < value.length; index += 1) {
          const item = plainJsonCopy(value[index], depth + 1);
          if (item === notPlain) return notPlain;
          copy.push(item);
        }
        return Object.freeze(copy);
      }
      const prototype: unknown = Object.getPrototypeOf(value);
      if (prototype !== Object.prototype && prototype !== null) return notPlain;
      const copy: Record<string, unknown> = {};
      for (const key of Object.keys(value)) {
        if (key === "__proto__") return notPlain;
        const member = plainJsonCopy((value as Record<string, unknown>)[key], depth + 1);
        if (member === notPlain) return notPlain;
        copy[key] = member;
      }
      return Object.freeze(copy);
    }
    default:
      return notPlain;
  }
}

/** What one append adds to a stream, computed before anything is written. */
export interface RecordedAppend {
  /** The recorded events, deeply frozen. */
  events: RecordedEvent[];
  /** `JSON.stringify` of each event, in order: what a backend stores. */
  raws: string[];
  head: StreamHead;
  lastGlobalPosition: number;
}

/**
 * Turns prepared events into recorded, hash-chained events that follow `head` in their stream
 * and `lastGlobalPosition` in the log. Takes the append's `recordedAt` from `times` once (all its
 * events share it — the appender's settled time, `AppendOptions.recordedAt`, or the clock's, never
 * before the stream's last; see recorded-time.ts — except an event of a new stream recorded
 * `recordedBeforeMs` earlier) and the ID source once per event without its own
 * `eventId`, in order, so that injected sources give the same log on every backend.
 */
export function recordEvents(
  stream: string,
  head: StreamHead,
  lastGlobalPosition: number,
  prepared: readonly PreparedEvent[],
  times: StreamTimes,
  ids: IdSource,
  settledAt?: number,
): RecordedAppend {
  if (head.version > 0 && prepared.some((event) => event.recordedBeforeMs > 0)) {
    // Before the append's time could be before the stream's last event.
    throw new TypeError(`recordedBeforeMs is only for an append that creates its stream ("${stream}" holds ${head.version} events)`);
  }
  const time = times.next(stream, settledAt);
  const recordedAt = new Date(time).toISOString();
  const events: RecordedEvent[] = [];
  const raws: string[] = [];
  let prevHash = head.hash;
  let streamPosition = head.version;
  let globalPosition = lastGlobalPosition;
  for (const event of prepared) {
    streamPosition += 1;
    globalPosition += 1;
    const eventId = event.eventId ?? ids.next();
    if (typeof eventId !== "string" || eventId.length === 0) {
      throw new TypeError(`the ID source returned ${describe(eventId)}, not a non-empty string`);
    }
    // Key order here is the order a person reading the stored JSON sees; the hash ignores it.
    const meta: Omit<RecordedEventMeta, "hash"> = {
      eventId,
      stream,
      streamPosition,
      globalPosition,
      recordedAt: event.recordedBeforeMs === 0 ? recordedAt : earlierTime(time, event.recordedBeforeMs),
      schemaVersion: event.schemaVersion,
      ...(event.causationId === undefined ? {} : { causationId: event.causationId }),
      prevHash,
    };
    const hash = computeRecordedEventHash(prevHash, event.type, event.data, meta);
    const recorded: RecordedEvent = { type: event.type, data: event.data, meta: { ...meta, hash } };
    // JSON.stringify(recorded), with the data's JSON text taken from the copy instead of written again.
    raws.push(`{"type":${JSON.stringify(event.type)},"data":${event.json},"meta":${JSON.stringify(recorded.meta)}}`);
    // The same object goes to every subscriber and back to the appender; freezing it keeps one
    // of them from changing what the others see. Reads return fresh, unfrozen copies.
    events.push(deepFreeze(recorded));
    prevHash = hash;
  }
  return { events, raws, head: { version: streamPosition, hash: prevHash }, lastGlobalPosition: globalPosition };
}

/** `time` less `before` ms, as ISO 8601; a `TypeError` when that is no time a `Date` can write. */
function earlierTime(time: number, before: number): string {
  const earlier = new Date(time - before);
  if (Number.isNaN(earlier.getTime())) throw new TypeError(`recordedBeforeMs ${before} is before any time a log can record`);
  return earlier.toISOString();
}

function deepFreeze<T>(value: T): T {
  if (typeof value !== "object" || value === null || Object.isFrozen(value)) return value;
  Object.freeze(value);
  // Indexes for an array, for…in for an object (no array of values made per object); primitives
  // are not visited at all. The values are plain JSON: own, enumerable members only.
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index += 1) {
      const child: unknown = value[index];
      if (typeof child === "object" && child !== null) deepFreeze(child);
    }
  } else {
    for (const key in value) {
      const child: unknown = value[key];
      if (typeof child === "object" && child !== null) deepFreeze(child);
    }
  }
  return value;
}

function canonicalizeOrUndefined(value: unknown): string | undefined {
  try {
    return canonicalJsonOf(value);
  } catch {
    return undefined;
  }
}

function describe(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "function") return "a function";
  if (typeof value === "bigint") return `${value}n`;
  if (typeof value === "symbol") return value.toString();
  if (Array.isArray(value)) return "an array";
  if (value === null) return "null";
  return typeof value === "object" ? "an object" : String(value);
}

import fc from "fast-check";
import type { ProviderFormat } from "../../../src/contracts/provider.js";
import { wellFormedText } from "../../../src/util/well-formed-text.js";

/**
 * What one fuzz case is made of (docs/reliability.md, family `fuzz`): a provider format and one or
 * two user messages, each answered by a script of fuzzed provider streams. Everything here is
 * data that fast-check generates and shrinks; `wire-streams.ts` renders a stream into the chunks
 * (OpenAI) or events (Anthropic) a real SSE stream carries.
 */

/** How a call's wire index (OpenAI `index`, Anthropic block `index`) is damaged, if at all. */
export type IndexFault = "none" | "missing" | "duplicate" | "shifted";

export interface FuzzCall {
  /** The provider's call ID as sent; `undefined`: none sent. */
  id: string | undefined;
  /** The tool name as sent; `undefined`: none sent. */
  name: string | undefined;
  /** The arguments text as the model wrote it (not necessarily JSON). */
  arguments: string;
  /** Where the arguments are cut into fragments (UTF-16 offsets: surrogate pairs may be split). */
  cuts: number[];
  /** Sort keys that interleave this call's fragments with the other calls' and the text's. */
  keys: number[];
  /** OpenAI: the name repeated on every fragment, as some servers do. */
  repeatName: boolean;
  /** OpenAI: the whole call in one fragment. Anthropic: the input sent up front in the block start. */
  whole: boolean;
  indexFault: IndexFault;
  /** Anthropic: the block is never stopped. */
  unstopped: boolean;
}

/** How a stream ends. */
export type StreamEnding =
  | { kind: "done" }
  /** OpenAI: no `[DONE]`; Anthropic: no `message_stop`. */
  | { kind: "no-done" }
  /** The connection breaks off after `at` of the stream's chunks (no `[DONE]`, no `message_stop`). */
  | { kind: "cut"; at: number }
  /** An in-band error (OpenAI `{ error }`, Anthropic `error` event) after `at` chunks. */
  | { kind: "error"; at: number; code: number | string }
  /** A chunk that is not a JSON object after `at` chunks. */
  | { kind: "garbage"; at: number; value: unknown };

export interface FuzzStream {
  text: string;
  textCuts: number[];
  textKeys: number[];
  calls: FuzzCall[];
  /** OpenAI `reasoning_content`, Anthropic a thinking block; empty: none. */
  reasoning: string;
  /**
   * The finish / stop reason sent: `consistent` picks the one the content calls for (`tool_calls` /
   * `tool_use` with calls, else `stop` / `end_turn`); `missing` sends none; else the wire value.
   */
  finish: string;
  ending: StreamEnding;
  usage: boolean;
  /** OpenAI: a chunk of another choice (`n > 1`) that must be ignored. Anthropic: `ping` events. */
  noise: boolean;
}

export interface FuzzSend {
  message: string;
  streams: FuzzStream[];
}

export interface FuzzCase {
  format: ProviderFormat;
  sends: FuzzSend[];
  /** How held calls are answered, in turn: approve (true) or deny (false), cycled. */
  answers: boolean[];
}

/** The tools of the fuzz runtime (fuzz-runner.ts), and names no tool has. */
export const toolNames = ["read_note", "lookup", "write_note", "archive_note", "charge_card", "drop_table"] as const;
const unknownNames = ["unknown_tool", "__proto__", "constructor", "toString", "read note", "read_note ", "ReadNote", "a".repeat(65), "ツール"];

/**
 * IDs drawn from a small pool, so that they collide within a response, across turns and across
 * user messages; IDs Anthropic refuses (`^[a-zA-Z0-9_-]+$`) or OpenAI refuses (over 40
 * characters); and one that looks like a derived ID.
 */
const pooledIds = ["call_1", "call_2", "toolu_01", "call_abc"];
const invalidIds = ["call.1", "call 2", "call:abc", "toolu_01\n", "ü", "call/1", "x".repeat(41), "__proto__", "call_\u{1F600}", "\ud800"];
const derivedLookingId = "call_0123456789abcdef0123456789abcdef";

/** Text with astral characters (split into surrogate halves by cuts), lone surrogates and multibyte characters. */
const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((code) => String.fromCharCode(code));
const textUnit = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom("a", "b", " ", "{", "\"", "\\", "\n", "é", "ß", "中", "\u{1F600}", "\u{1F468}\u200D\u{1F469}", "\u0000") },
  { weight: 2, arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 1 }) },
  { weight: 1, arbitrary: loneSurrogate },
);
const text = (maxLength: number) => fc.string({ unit: textUnit, maxLength });

/**
 * What the user typed: the host's own input, which must be valid Unicode (a lone surrogate there
 * is the host's `TypeError`, not model output to fuzz).
 */
const userMessage = text(20).map((message) => wellFormedText(message));

/** Argument texts: valid for the tools' schema, valid JSON of the wrong shape, not JSON, truncated JSON. */
function argumentsText(): fc.Arbitrary<string> {
  const valid = text(24).map((value) => JSON.stringify({ value }));
  return fc.oneof(
    { weight: 6, arbitrary: valid },
    { weight: 2, arbitrary: fc.json({ maxDepth: 2 }) },
    { weight: 1, arbitrary: fc.constantFrom("", "null", "[1,2]", "42", "\"value\"", "{}", "{\"value\":1}", "{\"value\":\"x\"} trailing", "{'value': 'x'}", "{\"__proto__\":{\"value\":\"x\"}}") },
    { weight: 2, arbitrary: fc.tuple(valid, fc.nat()).map(([json, cut]) => json.slice(0, cut % Math.max(1, json.length))) },
    { weight: 1, arbitrary: text(24) },
  );
}

const keys = fc.array(fc.nat({ max: 1_000_000 }), { minLength: 12, maxLength: 12 });
const cuts = fc.array(fc.nat({ max: 10_000 }), { maxLength: 5 });

const call: fc.Arbitrary<FuzzCall> = fc.record({
  id: fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...pooledIds) },
    { weight: 3, arbitrary: fc.stringMatching(/^[A-Za-z0-9_-]{1,40}$/) },
    { weight: 2, arbitrary: fc.constant(undefined) },
    { weight: 2, arbitrary: fc.constantFrom(...invalidIds, derivedLookingId, "") },
  ),
  name: fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom<string | undefined>(...toolNames) },
    { weight: 2, arbitrary: fc.constantFrom<string | undefined>(...unknownNames, "", undefined) },
  ),
  arguments: argumentsText(),
  cuts,
  keys,
  repeatName: fc.boolean(),
  whole: fc.boolean(),
  indexFault: fc.oneof({ weight: 12, arbitrary: fc.constant<IndexFault>("none") }, { weight: 1, arbitrary: fc.constantFrom<IndexFault>("missing", "duplicate", "shifted") }),
  unstopped: fc.oneof({ weight: 20, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
});

const openAiFinish = ["stop", "tool_calls", "length", "content_filter", "function_call", "eos"];
const anthropicFinish = ["end_turn", "tool_use", "max_tokens", "stop_sequence", "pause_turn", "refusal", "model_context_window_exceeded", "compaction"];

function ending(): fc.Arbitrary<StreamEnding> {
  return fc.oneof(
    { weight: 16, arbitrary: fc.constant<StreamEnding>({ kind: "done" }) },
    { weight: 1, arbitrary: fc.constant<StreamEnding>({ kind: "no-done" }) },
    { weight: 1, arbitrary: fc.nat({ max: 40 }).map<StreamEnding>((at) => ({ kind: "cut", at })) },
    {
      weight: 1,
      arbitrary: fc.record({ at: fc.nat({ max: 40 }), code: fc.constantFrom<number | string>(400, 429, 500, "overloaded_error", "invalid_request_error", "api_error") }).map<StreamEnding>(({ at, code }) => ({ kind: "error", at, code })),
    },
    { weight: 1, arbitrary: fc.record({ at: fc.nat({ max: 40 }), value: fc.constantFrom<unknown>(null, "data: {", 42, [], true) }).map<StreamEnding>(({ at, value }) => ({ kind: "garbage", at, value })) },
  );
}

/**
 * One stream. Its finish reason is drawn from both providers' values, so each format also gets
 * the other's (`end_turn` as an OpenAI `finish_reason`): a value it does not know.
 */
const stream: fc.Arbitrary<FuzzStream> = fc.record({
  text: text(40),
  textCuts: cuts,
  textKeys: keys,
  calls: fc.array(call, { maxLength: 4 }),
  reasoning: fc.oneof({ weight: 5, arbitrary: fc.constant("") }, { weight: 1, arbitrary: text(20) }),
  finish: fc.oneof({ weight: 14, arbitrary: fc.constant("consistent") }, { weight: 6, arbitrary: fc.constantFrom(...openAiFinish, ...anthropicFinish, "missing") }),
  ending: ending(),
  usage: fc.boolean(),
  noise: fc.boolean(),
});

/**
 * Most cases are one user message answered by one or two streams (then a plain final answer);
 * some have a second message, whose calls' IDs can collide with the first one's.
 */
const send: fc.Arbitrary<FuzzSend> = fc.record({
  message: userMessage,
  streams: fc.oneof({ weight: 3, arbitrary: fc.array(stream, { minLength: 1, maxLength: 2 }) }, { weight: 1, arbitrary: fc.array(stream, { minLength: 3, maxLength: 3 }) }),
});

/**
 * One fuzz case; with `huge`, its first stream also carries a call whose arguments are about
 * 1 MB (the runner gives every `hugeEvery`-th case index one, so a run holds a known number).
 */
export function fuzzCaseArbitrary(options: { huge: boolean }): fc.Arbitrary<FuzzCase> {
  return fc
    .record({
      format: fc.constantFrom<ProviderFormat>("openai-chat", "anthropic-messages"),
      sends: fc.oneof({ weight: 4, arbitrary: fc.tuple(send) }, { weight: 1, arbitrary: fc.tuple(send, send) }),
      answers: fc.array(fc.boolean(), { minLength: 1, maxLength: 4 }),
    })
    .map((fuzz) => (options.huge ? withHugeArguments(fuzz) : fuzz));
}

/** About a megabyte of arguments: a valid call with a long value, cut into a few fragments. */
export const hugeArgumentsChars = 1_000_000;

function withHugeArguments(fuzz: FuzzCase): FuzzCase {
  const [first, ...rest] = fuzz.sends;
  if (first === undefined) return fuzz;
  const [stream, ...others] = first.streams;
  if (stream === undefined) return fuzz;
  const value = "0123456789abcdef\u00e9\u{1F600}".repeat(Math.ceil(hugeArgumentsChars / 19)).slice(0, hugeArgumentsChars);
  const hugeCall: FuzzCall = {
    id: "call_huge",
    name: "read_note",
    arguments: JSON.stringify({ value }),
    cuts: [1, 333_333, 666_667],
    keys: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
    repeatName: false,
    whole: false,
    indexFault: "none",
    unstopped: false,
  };
  return { ...fuzz, sends: [{ ...first, streams: [{ ...stream, calls: [hugeCall, ...stream.calls] }, ...others] }, ...rest] };
}

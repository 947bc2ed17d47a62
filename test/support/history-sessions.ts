import type { EventOf, TurnlogEvent } from "../../src/contracts/events.js";
import type { FinishReason, ProviderFormat } from "../../src/contracts/provider.js";
import { foldEvents } from "../../src/projections/projection.js";
import { sessionStateProjection, type SessionState } from "../../src/projections/session-state.js";
import { recordForTest } from "../../src/testing/given-when-then.js";
import { sessionStarted } from "./events.js";

export interface ScriptedCall {
  id: string;
  name?: string;
  arguments?: string;
  redacted?: boolean;
}

export interface ScriptedResult {
  ok?: boolean;
  content?: string;
  errorCode?: string;
}

/**
 * Writes the events of a session, turn by turn, for history specs (the projection does not check
 * the turn machine's order, so planning and gating are left out unless a spec needs them).
 *
 * @example
 * const state = new HistorySession().user("read a").toolTurn({ calls: [{ id: "call_a" }], results: [{ content: "alpha" }] }).answer("done").state();
 */
export class HistorySession {
  readonly events: TurnlogEvent[];
  #turnSeq = 0;
  #iteration = 0;

  constructor(options: { provider?: { id: string; format: ProviderFormat } } = {}) {
    this.events = [sessionStarted(options.provider ? { provider: { ...options.provider, maxAttempts: 2 } } : {})];
  }

  user(content: string): this {
    this.#iteration = 0;
    this.events.push({ type: "session.user_message.added", data: { content } });
    return this;
  }

  /** A turn that ends with a final answer. */
  answer(text: string, options: { echo?: Record<string, unknown>; finishReason?: FinishReason } = {}): this {
    const turnId = this.#startTurn();
    this.events.push(this.#responded(turnId, text, [], options.finishReason ?? "stop", options.echo));
    this.events.push({ type: "turn.completed", data: { turnId, text } });
    return this;
  }

  /**
   * A turn with tool calls. `results`: one per call, in call order (a shorter list leaves the rest
   * without a packet; `"none"` packetizes nothing: the turn is in flight).
   */
  toolTurn(turn: {
    content?: string;
    calls: ScriptedCall[];
    results?: ScriptedResult[] | "none";
    finishReason?: FinishReason;
    echo?: Record<string, unknown>;
    echoDropped?: "echo_oversized" | "unsafe_arguments" | "echo_secret";
    nativeReplaySafe?: boolean;
    unsafeReasons?: string[];
    /** Packet order, when it should differ from call order (indexes into `results`). */
    packetOrder?: number[];
  }): this {
    const turnId = this.#startTurn();
    const content = turn.content ?? "";
    const finishReason = turn.finishReason ?? "tool_calls";
    const raw = turn.calls.map((call, index) => ({
      index,
      id: call.id,
      name: call.name ?? "read_file",
      argumentsText: call.arguments ?? '{"path":"a.txt"}',
      ...(call.redacted ? { argumentsRedacted: true } : {}),
    }));
    this.events.push(this.#responded(turnId, content, raw, finishReason, turn.echo, turn.echoDropped));
    const unsafeReasons = turn.unsafeReasons ?? [
      ...(finishReason === "length" ? ["length_truncated"] : []),
      ...(turn.calls.some((call) => call.redacted) ? ["unsafe_arguments"] : []),
    ];
    this.events.push({
      type: "turn.tool_calls.normalized",
      data: {
        turnId,
        content,
        calls: raw.map((call) => ({
          index: call.index,
          id: call.id,
          idSource: "provider" as const,
          providerId: call.id,
          name: call.name,
          argumentsText: call.argumentsText,
          ...(call.argumentsRedacted ? { argumentsRedacted: true } : {}),
        })),
        nativeReplaySafe: turn.nativeReplaySafe ?? unsafeReasons.length === 0,
        unsafeReasons,
      },
    });
    const results: ScriptedResult[] | "none" = turn.results ?? turn.calls.map((): ScriptedResult => ({}));
    if (results !== "none") {
      const order = turn.packetOrder ?? results.map((_, index) => index);
      const packets = order.flatMap((index) => {
        const result = results[index];
        const call = raw[index];
        if (result === undefined || call === undefined) return [];
        const ok = result.ok ?? true;
        const packetContent = result.content ?? (ok ? "ok" : "Error: not run.");
        return [
          {
            callId: call.id,
            tool: call.name,
            ok,
            content: packetContent,
            truncated: false,
            originalChars: packetContent.length,
            ...(ok ? {} : { errorCode: result.errorCode ?? "tool-exception" }),
          },
        ];
      });
      if (packets.length > 0) this.events.push({ type: "turn.results.packetized", data: { turnId, packets } });
      this.events.push({ type: "turn.continued", data: { turnId, reason: "tool-results" } });
    }
    return this;
  }

  /** Any other event (a compaction, a stray packet). */
  push(event: TurnlogEvent): this {
    this.events.push(event);
    return this;
  }

  /** The session-state projection of the events so far. */
  state(): SessionState {
    return foldEvents(sessionStateProjection, recordForTest(this.events));
  }

  /** The stream position the next event will get. */
  get nextPosition(): number {
    return this.events.length + 1;
  }

  #startTurn(): string {
    this.#turnSeq += 1;
    this.#iteration += 1;
    const turnId = `turn-${this.#turnSeq}`;
    this.events.push({ type: "turn.started", data: { turnId, turnSeq: this.#turnSeq, iteration: this.#iteration } });
    return turnId;
  }

  #responded(
    turnId: string,
    content: string,
    toolCalls: EventOf<"turn.provider.responded">["data"]["toolCalls"],
    finishReason: FinishReason,
    echo?: Record<string, unknown>,
    echoDropped?: "echo_oversized" | "unsafe_arguments" | "echo_secret",
  ): TurnlogEvent {
    return {
      type: "turn.provider.responded",
      data: {
        turnId,
        attempt: 1,
        content,
        toolCalls,
        finishReason,
        ...(echo !== undefined ? { echo } : {}),
        ...(echoDropped !== undefined ? { echoDropped } : {}),
      },
    };
  }
}

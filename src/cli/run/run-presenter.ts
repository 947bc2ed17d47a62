import type { RecordedTurnlogEvent } from "../../log/event-log.js";
import type { DiscardedAttempt } from "../../runtime/provider-turn-loop.js";
import type { TextSink } from "../cli-io.js";
import type { Paint, Tone } from "../terminal-style.js";
import { formatDuration, preview, truncate } from "../timeline.js";
import { redactText } from "../../policy/secrets/secret-detector.js";
import { terminalSafe, terminalText } from "../terminal-text.js";

/** How a {@link RunPresenter} writes. */
export interface RunPresenterOptions {
  out: TextSink;
  paint: Paint;
  /**
   * A terminal: a spinner shows while the model is thought about and while tools run. Off, every
   * line is plain and final, fit for a pipe or a CI log.
   */
  live: boolean;
  /** What the spinner says it waits for, e.g. the provider's ID. */
  modelLabel: string;
  /**
   * Redacts the model's streamed text before it is shown (`turnlog run` passes its redactor, which
   * knows the provider's key); default: the secret detector alone.
   */
  redact?: (text: string) => string;
}

/** Streamed text is shown a line at a time, so a secret is whole when it is redacted; a longer line is cut here. */
const heldLineChars = 4_096;
/** An unfinished PEM block is held whole (its lines alone look like nothing), up to this size. */
const heldBlockChars = 16_384;

const spinnerFrames = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const spinnerIntervalMs = 80;
/** Erases the current terminal line and returns to its start. */
const clearLine = "\r\u001b[2K";

const decisionTones: Record<string, Tone> = { allow: "good", ask: "warn", deny: "bad", block: "bad" };
const decisionMarks: Record<string, string> = { allow: "●", ask: "⏸", deny: "✗", block: "✗" };

/**
 * What a person watching `turnlog run` sees, as it happens: the model's text as it streams
 * (`onDelta`), and — from the session's events, as the log commits them (`onEvent`, for
 * `log.subscribe`) — each tool call with the gate's decision and the rule that made it, each
 * approval, each result, and each failed provider attempt. On a terminal a spinner shows what is
 * being waited for. Everything it prints comes from the log or the provider's visible text, so it
 * can show nothing the log does not hold (no key, no secret the log redacted).
 *
 * @example
 * const presenter = new RunPresenter({ out: process.stdout, paint, live: process.stdout.isTTY, modelLabel: provider.id });
 * const runtime = await createRuntime({ ..., onDelta: presenter.onDelta });
 * const unsubscribe = log.subscribe(presenter.onEvent, { stream: sessionStream(id) });
 */
export class RunPresenter {
  readonly #out: TextSink;
  readonly #paint: Paint;
  readonly #live: boolean;
  /** What the spinner says it waits for (settable once the provider is known). */
  modelLabel: string;
  #atLineStart = true;
  /** Characters of visible text streamed for the current provider attempt. */
  #streamed = 0;
  #waitingForModel = false;
  /** Calls running now: call ID → tool name. */
  readonly #running = new Map<string, string>();
  readonly #toolOfCall = new Map<string, string>();
  /** Planned inputs by call ID, shown with the gate's decision. */
  readonly #inputs = new Map<string, unknown>();
  #timer: ReturnType<typeof setInterval> | undefined;
  #frame = 0;
  #spinnerShown = false;
  #redact: (text: string) => string;
  /** Streamed text not shown yet: the rest of a line, or an unfinished PEM block. */
  #held = "";
  /** The label is written once per provider attempt, before its first text. */
  #assistantLabelShown = false;

  constructor(options: RunPresenterOptions) {
    this.#out = options.out;
    this.#paint = options.paint;
    this.#live = options.live;
    this.modelLabel = options.modelLabel;
    this.#redact = options.redact ?? ((text) => redactText(text).text);
  }

  /**
   * Visible text as the provider streams it, redacted like everything the log holds: a model that
   * echoes the key shows `[REDACTED]` here too. Shown a line at a time (a secret split across
   * deltas is whole when it is checked); the rest comes with the response's end.
   */
  readonly onDelta = (text: string): void => {
    if (text === "") return;
    this.#waitingForModel = false;
    this.#streamed += text.length;
    this.#held += text;
    const openBlock = this.#held.lastIndexOf("-----BEGIN") > this.#held.lastIndexOf("-----END");
    if (openBlock && this.#held.length < heldBlockChars) return;
    const lineEnd = this.#held.lastIndexOf("\n");
    if (lineEnd < 0 && this.#held.length < heldLineChars) return;
    const shown = lineEnd < 0 || openBlock ? this.#held : this.#held.slice(0, lineEnd + 1);
    this.#held = this.#held.slice(shown.length);
    this.#show(shown);
  };

  /**
   * An attempt whose text streamed above failed and was thrown away (`onAttemptDiscarded`): says
   * so, since that text is in neither the log nor the model's history, and a retry streams anew.
   */
  readonly onAttemptDiscarded = (attempt: DiscardedAttempt): void => {
    // What was held back of it was never shown, and now never will be.
    this.#held = "";
    this.line(this.#paint("dim", `  ↺ the text streamed for attempt ${attempt.attempt} (${attempt.streamedChars} characters) was discarded: it is not in the log`));
  };

  /** Shows what streamed text is still held (at the response's end, or before any other line). */
  #flushHeld(): void {
    const shown = this.#held;
    this.#held = "";
    if (shown !== "") this.#show(shown);
  }

  #show(raw: string): void {
    // Redacted first (a rule sees the text as the provider sent it), then its terminal controls escaped.
    const text = terminalText(this.#redact(raw));
    this.#hideSpinner();
    if (this.#atLineStart && !this.#assistantLabelShown) {
      this.#out.write(this.#paint("bold", "assistant › "));
      this.#assistantLabelShown = true;
    }
    this.#out.write(text);
    this.#atLineStart = text.endsWith("\n");
    this.#updateSpinner();
  }

  /** Redacts streamed text with `redact` from now on (a resumed run session's redactor, once its record is read). */
  redactWith(redact: (text: string) => string): void {
    this.#redact = redact;
  }

  /** One committed event of the session. */
  readonly onEvent = (recorded: RecordedTurnlogEvent): void => {
    // Tool output, arguments, notes and messages are shown with their terminal controls escaped (docs/security.md).
    const event = terminalSafe(recorded);
    const paint = this.#paint;
    switch (event.type) {
      case "turn.provider.requested": {
        const { attempt } = event.data;
        this.#flushHeld();
        this.#streamed = 0;
        this.#assistantLabelShown = false;
        if (attempt > 1) this.line(paint("dim", `  ↻ asking the model again (attempt ${attempt})`));
        this.#waitingForModel = true;
        break;
      }
      case "turn.provider.responded": {
        const { content } = event.data;
        this.#waitingForModel = false;
        // A provider that did not stream its text still gets it shown.
        if (this.#streamed === 0 && content.trim() !== "") this.onDelta(content);
        this.#flushHeld();
        this.#endLine();
        break;
      }
      case "turn.provider.failed": {
        const { kind, message } = event.data;
        this.#waitingForModel = false;
        // The message was scrubbed of the key by the adapter and redacted again before it was logged.
        this.line(`  ${paint("bad", "!")} ${paint("bad", `provider ${kind}`)}${message !== undefined ? `: ${truncate(message.replace(/\s+/g, " "), 200)}` : ""}`);
        break;
      }
      case "turn.tool_calls.normalized": {
        for (const call of event.data.calls) this.#toolOfCall.set(call.id, call.name);
        break;
      }
      case "turn.tool_calls.planned": {
        for (const plan of event.data.plans) {
          if (plan.tool !== undefined) this.#toolOfCall.set(plan.callId, plan.tool);
          this.#inputs.set(plan.callId, plan.input);
          if (plan.status === "rejected") this.line(`  ${paint("bad", "✗")} ${this.#toolOf(plan.callId)} ${paint("bad", `rejected (${plan.reason ?? "invalid"})`)} ${paint("dim", "— the model is told why")}`);
        }
        break;
      }
      case "turn.tool_calls.gated": {
        for (const decision of event.data.decisions) {
          const tone = decisionTones[decision.decision] ?? "dim";
          const input = this.#inputs.get(decision.callId);
          const inputText = input === undefined ? "" : ` ${paint("input", truncate(JSON.stringify(input) ?? "", decision.decision === "ask" ? 400 : 100))}`;
          this.line(
            `  ${paint(tone, decisionMarks[decision.decision] ?? "·")} ${paint("bold", this.#toolOf(decision.callId))}${inputText}  ${paint(tone, decision.decision)} ${paint("dim", `· rule ${decision.rule} · ${decision.riskClass ?? "no risk class"} · ${decision.callId}`)}`,
          );
        }
        break;
      }
      case "turn.approval.granted":
      case "turn.approval.denied": {
        const { callId, by, note, scope } = event.data;
        const granted = event.type === "turn.approval.granted";
        const tool = this.#toolOf(callId);
        const forTool = granted && scope === "tool" ? `, and ${tool} for the rest of the session` : "";
        this.line(`  ${granted ? paint("good", "✓ approved") : paint("bad", "✗ denied")} ${tool} by ${by}${forTool}${note !== undefined ? paint("dim", ` · ${preview(note, 80)}`) : ""}`);
        break;
      }
      case "turn.tool.started": {
        const { callId, tool } = event.data;
        this.#running.set(callId, tool);
        break;
      }
      case "turn.tool.succeeded": {
        const { callId, durationMs, output } = event.data;
        this.#running.delete(callId);
        this.line(`  ${paint("good", "✓")} ${this.#toolOf(callId)} ${paint("dim", `${formatDuration(durationMs)} · ${preview(output, 60)}`)}`);
        break;
      }
      case "turn.tool.failed": {
        const { callId, code, message } = event.data;
        this.#running.delete(callId);
        this.line(`  ${paint("bad", "✗")} ${this.#toolOf(callId)} ${paint("bad", `failed (${code})`)} ${paint("dim", preview(message, 100))}`);
        break;
      }
      case "turn.tool.interrupted": {
        const { callId } = event.data;
        this.#running.delete(callId);
        this.line(`  ${paint("warn", "✗")} ${this.#toolOf(callId)} ${paint("warn", "interrupted: the process stopped while it ran; it is not run again")}`);
        break;
      }
      case "session.started":
      case "session.config.changed":
      case "session.decisions.upgraded":
      case "session.tools.changed":
      case "session.environment.observed":
      case "session.user_message.added":
      case "turn.started":
      case "turn.results.packetized":
      case "turn.completed":
      case "turn.continued":
      case "turn.stopped":
      case "turn.failed":
      case "turn.cancel.requested":
      case "session.native_tool.requested":
      case "session.native_tool.decided":
      case "session.native_tool.completed":
      case "session.history.compacted":
      case "session.diagnostic.recorded":
        // Shown by the command once the turn ends (its outcome), or not shown while it runs.
        break;
      default:
        event satisfies never;
    }
    this.#updateSpinner();
  };

  /**
   * Learns the tool names and inputs of calls recorded before it was attached (for `resume`),
   * printing nothing.
   */
  remember(events: readonly RecordedTurnlogEvent[]): void {
    for (const event of terminalSafe(events)) {
      if (event.type === "turn.tool_calls.normalized") {
        for (const call of event.data.calls) this.#toolOfCall.set(call.id, call.name);
      } else if (event.type === "turn.tool_calls.planned") {
        for (const plan of event.data.plans) {
          if (plan.tool !== undefined) this.#toolOfCall.set(plan.callId, plan.tool);
          this.#inputs.set(plan.callId, plan.input);
        }
      }
    }
  }

  /** Writes a whole line, after any streamed text, keeping the spinner below it. */
  line(text = ""): void {
    this.#flushHeld();
    this.#hideSpinner();
    this.#endLine();
    this.#out.write(`${text}\n`);
    this.#updateSpinner();
  }

  /** Stops the spinner and ends a line of streamed text, before a prompt or the closing lines. */
  stop(): void {
    this.#flushHeld();
    this.#waitingForModel = false;
    this.#running.clear();
    this.#updateSpinner();
    this.#endLine();
  }

  #toolOf(callId: string): string {
    return this.#toolOfCall.get(callId) ?? "call";
  }

  #endLine(): void {
    if (this.#atLineStart) return;
    this.#out.write("\n");
    this.#atLineStart = true;
  }

  #spinnerLabel(): string | undefined {
    if (this.#running.size > 0) return `running ${[...new Set(this.#running.values())].join(", ")}`;
    if (this.#waitingForModel) return `waiting for ${terminalText(this.modelLabel)}`;
    return undefined;
  }

  /** Starts, redraws or stops the spinner to match what is being waited for. */
  #updateSpinner(): void {
    if (!this.#live) return;
    const label = this.#spinnerLabel();
    // Never over streamed text: the spinner lives on a line of its own.
    if (label === undefined || !this.#atLineStart) {
      this.#hideSpinner();
      if (label === undefined && this.#timer !== undefined) {
        clearInterval(this.#timer);
        this.#timer = undefined;
      }
      return;
    }
    this.#drawSpinner(label);
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => {
        this.#frame = (this.#frame + 1) % spinnerFrames.length;
        const current = this.#spinnerLabel();
        if (current !== undefined && this.#atLineStart) this.#drawSpinner(current);
      }, spinnerIntervalMs);
      // A spinner never keeps the process alive.
      this.#timer.unref();
    }
  }

  #drawSpinner(label: string): void {
    this.#out.write(`${clearLine}${this.#paint("accent", spinnerFrames[this.#frame] ?? "·")} ${this.#paint("dim", label)}`);
    this.#spinnerShown = true;
  }

  #hideSpinner(): void {
    if (!this.#spinnerShown) return;
    this.#out.write(clearLine);
    this.#spinnerShown = false;
  }
}

import type { HistoryFormat } from "../history/history-format.js";
import type { StreamingAdapterOptions } from "./adapter-options.js";
import type { Provider } from "./provider.js";
import type { FinalizationResult } from "./stream-finalization.js";

/**
 * Everything turnlog knows about one provider wire format, in one object (docs/providers.md,
 * "Adding a provider format"): the history half (`HistoryFormat`: message shapes, serializer,
 * incremental lane, the `-serialized` counts), the stream finalizer, the OpenTelemetry names and
 * the ID rules. Each format is a folder under src/providers/ named after it, whose `index.ts` exports its
 * adapter; the registry (src/providers/formats.ts) maps the recorded name to it, and nothing
 * outside those folders and the registry tells formats apart.
 */
export interface FormatAdapter<Message = unknown> extends HistoryFormat<Message> {
  /** The OpenTelemetry GenAI names of a request in this format (docs/observability.md). */
  readonly otel: {
    /** `gen_ai.provider.name`. */
    readonly providerName: string;
    /**
     * `gen_ai.provider.name` from a provider ID whose shape names the provider behind the format
     * (an AI SDK model's own provider), or `undefined` for `providerName`.
     */
    providerNameOf?(providerId: string): string | undefined;
    /** `gen_ai.operation.name` of a provider attempt, and the first word of its span's name. */
    readonly operationName: string;
    /**
     * `gen_ai.request.model` from a provider ID whose shape is the format's own, or `undefined`
     * for the default reading (`<format>:<model>`).
     */
    requestModel?(providerId: string): string | undefined;
  };
  /**
   * What the format's API accepts as a tool call ID and a tool name. History units are decided
   * once for every format (a session may move to another provider), so turnlog sends a call
   * natively only when its ID and name are valid for every format (history-units.ts); a test
   * holds each adapter's rules to that.
   */
  readonly ids: {
    isValidToolCallId(id: string): boolean;
    isValidToolName(name: string): boolean;
  };
  /**
   * Runs a whole stream, already parsed, through the format's finalizer — what a streaming adapter
   * does chunk by chunk (the scripted provider's `{ chunks }` steps). `done`: the stream's end
   * marker was seen, for a format whose events do not say so themselves.
   */
  finalizeStream(chunks: readonly unknown[], options: { done: boolean; onText?: (text: string) => void }): FinalizationResult;
  /**
   * The reasoning a recorded response's `echo` holds, one entry per part, as a person reads it
   * (`turnlog view`): thinking text, reasoning summaries; a part whose reasoning travels only
   * encrypted or redacted is `(encrypted reasoning)` / `(redacted thinking)`. An echo of another
   * shape gives none: it is only shown, never trusted.
   */
  reasoningOf(echo: Readonly<Record<string, unknown>>): string[];
  /**
   * turnlog's own SDK adapter for the format, when it has one: the `--provider` kind `turnlog run`
   * names it by (recorded in a run's record) and the factory. A format served only by a host's
   * own `Provider` has none.
   */
  readonly sdk?: {
    readonly runKind: string;
    create(options: StreamingAdapterOptions): Provider;
  };
  /**
   * For a format that drives the model objects of another library's installed provider packages
   * (the AI SDK bridge): what `turnlog run --ai-sdk <package>` needs to find a provider among a
   * package's exports and to wrap one of its models (docs/cli-run.md, "An AI SDK provider package").
   */
  readonly modelPackage?: {
    /** Whether a package's export is a provider of models of this library. */
    isModelProvider(value: unknown): boolean;
    /** A model of such a provider as a turnlog provider; a `TypeError` for an object that is no such model. */
    create(model: unknown, options: { providerOptions?: Record<string, Record<string, unknown>> }): Provider;
  };
}

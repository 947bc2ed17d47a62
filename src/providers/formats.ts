import { ProviderFormatSchema, type ProviderFormat } from "../contracts/provider.js";
import { aiSdkFormat } from "./ai-sdk/index.js";
import { anthropicMessagesFormat } from "./anthropic-messages/index.js";
import type { FormatAdapter } from "./format-adapter.js";
import { openAiChatFormat } from "./openai-chat/index.js";

/*
 * The registry of provider formats (docs/providers.md, "Adding a provider format"): the recorded
 * name of a format (`ProviderFormatSchema`, src/contracts/provider.ts) to its adapter. The
 * `satisfies` makes a name without an adapter a compile error, so adding a format is: its name in
 * the schema, its folder, its line here.
 */
const adapters = {
  "openai-chat": openAiChatFormat,
  "anthropic-messages": anthropicMessagesFormat,
  "ai-sdk": aiSdkFormat,
} as const satisfies Record<ProviderFormat, FormatAdapter>;

/** The message type of a format, from its adapter (`FormatMessage<"openai-chat">` is `OpenAiChatMessage`). */
export type FormatMessage<Name extends ProviderFormat> = (typeof adapters)[Name] extends FormatAdapter<infer Message> ? Message : never;

/** Every format's name, in the schema's order. */
export const providerFormatNames: readonly ProviderFormat[] = ProviderFormatSchema.options;

/** The format of a provider that names none (the scripted provider's default). */
export const defaultProviderFormatName: ProviderFormat = "openai-chat";

/**
 * The adapter of a format, by its recorded name.
 *
 * @example
 * providerFormat("anthropic-messages").otel.providerName; // "anthropic"
 */
export function providerFormat<Name extends ProviderFormat>(name: Name): FormatAdapter<FormatMessage<Name>> {
  return adapters[name] as FormatAdapter<FormatMessage<Name>>;
}

/**
 * The adapter of a format named by any string (a CLI flag, an attribute), or `undefined` for a
 * name no adapter has.
 *
 * @example
 * findProviderFormat("gemini-native"); // undefined: no adapter has that name
 */
export function findProviderFormat(name: string): FormatAdapter | undefined {
  return isProviderFormatName(name) ? adapters[name] : undefined;
}

/**
 * True for the name of a format turnlog has an adapter for.
 *
 * @example
 * isProviderFormatName("openai-chat"); // true
 */
export function isProviderFormatName(name: string): name is ProviderFormat {
  return Object.hasOwn(adapters, name);
}

/**
 * The format whose SDK adapter `turnlog run` names by `kind` (`--provider openai`), or `undefined`.
 *
 * @example
 * formatOfRunKind("anthropic")?.sdk?.create({ model: "claude-sonnet-4-5" });
 */
export function formatOfRunKind(kind: string): FormatAdapter | undefined {
  return Object.values<FormatAdapter>(adapters).find((adapter) => adapter.sdk?.runKind === kind);
}

/**
 * The format that drives the model objects of an installed provider package (`turnlog run
 * --ai-sdk <package>`), or `undefined` when no format does.
 *
 * @example
 * modelPackageFormat()?.modelPackage?.isModelProvider(openai); // true
 */
export function modelPackageFormat(): FormatAdapter | undefined {
  return Object.values<FormatAdapter>(adapters).find((adapter) => adapter.modelPackage !== undefined);
}

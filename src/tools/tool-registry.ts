import { z } from "zod";
import type { ProviderToolSchema, ToolSnapshot } from "../contracts/tools.js";
import { canonicalJson, sha256 } from "../util/digest.js";
import type { ToolDefinition } from "./define-tool.js";
import { wellFormedText, wellFormedValue } from "../util/well-formed-text.js";

/**
 * Registration phases, in order (docs/embedding.md#registering-tools-in-phases): MCP tools first, then the four host phases. A
 * tool provider registers in one named phase and sees what earlier phases registered.
 */
export const registrationPhases = ["mcp", "pre-skill-visibility", "post-skill-visibility", "post-memory-provider", "post-tool-executor"] as const;
export type RegistrationPhase = (typeof registrationPhases)[number];

/** What a tool provider's `register` receives. */
export interface ToolRegistrationContext {
  phase: RegistrationPhase;
  /** Every tool registered so far (earlier phases, and earlier providers of this phase). */
  registered(): readonly ToolDefinition[];
  has(name: string): boolean;
  add(tool: ToolDefinition): void;
}

/**
 * Registers tools in one phase, e.g. a skill system that exposes tools depending on what is
 * already visible.
 *
 * @example
 * const memory: ToolProvider = {
 *   name: "memory", phase: "post-memory-provider",
 *   register: ({ add, has }) => { if (!has("recall")) add(recallTool); },
 * };
 */
export interface ToolProvider {
  name: string;
  phase: Exclude<RegistrationPhase, "mcp">;
  register(context: ToolRegistrationContext): void | Promise<void>;
}

interface Entry {
  tool: ToolDefinition;
  schema: ProviderToolSchema;
  phase: RegistrationPhase;
  source: string;
}

/**
 * The tools of a runtime, looked up in a `Map` so that a model-supplied name (`__proto__`,
 * `constructor`) can never reach an object prototype. A duplicate name is an error at
 * registration, naming both registrants — never a surprise at call time.
 */
export class ToolRegistry {
  #entries = new Map<string, Entry>();
  #generation = 0;
  #snapshot: ToolSnapshot[] | undefined;

  /** A registry of plain tools (registered as the host's, in `pre-skill-visibility`). */
  constructor(tools: readonly ToolDefinition[] = []) {
    for (const tool of tools) this.register(tool, { phase: "pre-skill-visibility", source: "host" });
  }

  /**
   * Builds a registry phase by phase: MCP tools, then the host's own `tools` (at the start of
   * `pre-skill-visibility`), then each provider in its phase, in the order given.
   */
  static async build(options: { mcp?: readonly { source: string; tools: readonly ToolDefinition[] }[]; tools?: readonly ToolDefinition[]; providers?: readonly ToolProvider[] }): Promise<ToolRegistry> {
    const registry = new ToolRegistry();
    for (const server of options.mcp ?? []) {
      for (const tool of server.tools) registry.register(tool, { phase: "mcp", source: `mcp:${server.source}` });
    }
    for (const tool of options.tools ?? []) registry.register(tool, { phase: "pre-skill-visibility", source: "host" });
    const providers = options.providers ?? [];
    for (const provider of providers) {
      if (!registrationPhases.includes(provider.phase) || provider.phase === ("mcp" as RegistrationPhase)) {
        throw new TypeError(`tool provider "${provider.name}" names an unknown phase "${String(provider.phase)}"; use one of ${registrationPhases.slice(1).join(", ")}`);
      }
    }
    for (const phase of registrationPhases.slice(1)) {
      for (const provider of providers.filter((candidate) => candidate.phase === phase)) {
        await provider.register({
          phase,
          registered: () => registry.list(),
          has: (name) => registry.has(name),
          add: (tool) => registry.register(tool, { phase, source: provider.name }),
        });
      }
    }
    return registry;
  }

  /** Adds a tool; a duplicate name throws a `TypeError` naming both registrants. */
  register(tool: ToolDefinition, origin: { phase: RegistrationPhase; source: string } = { phase: "pre-skill-visibility", source: "host" }): void {
    const existing = this.#entries.get(tool.name);
    if (existing !== undefined) {
      throw new TypeError(
        `tool "${tool.name}" from ${origin.source} (${origin.phase}) duplicates the one from ${existing.source} (${existing.phase}); tool names must be unique`,
      );
    }
    // A tool's own JSON Schema (an MCP server's) is offered as it is, copied so that a later change
    // to the caller's object cannot change what was digested; otherwise zod's own output, where
    // `io: "input"` describes what the model must send.
    // Both are recorded in `session.started` and hashed, so a lone surrogate in them (a host's
    // description cut mid-emoji) becomes U+FFFD here rather than a log that refuses the session.
    const parameters = wellFormedValue(
      tool.parameters !== undefined ? structuredClone(tool.parameters) : (z.toJSONSchema(tool.input, { io: "input", unrepresentable: "any" }) as Record<string, unknown>),
    );
    // Providers need no dialect tag; dropping it treats both kinds of schema alike.
    delete parameters.$schema;
    const description = wellFormedText(tool.description);
    this.#entries.set(tool.name, { tool: description === tool.description ? tool : { ...tool, description }, schema: { name: tool.name, description, parameters }, ...origin });
    this.#changed();
  }

  /**
   * Replaces the tools one MCP server registered (`source: "mcp:<server>"`) with its new list, as
   * after its `tools/list_changed`: they keep their place among the MCP tools, before the host's.
   * A name that would clash with another registrant's throws and leaves the registry as it was.
   *
   * @example
   * registry.replaceMcpTools("everything", connection.tools);
   */
  replaceMcpTools(server: string, tools: readonly ToolDefinition[]): void {
    const source = `mcp:${server}`;
    const before = this.#entries;
    for (const tool of tools) {
      const existing = before.get(tool.name);
      if (existing !== undefined && existing.source !== source) {
        throw new TypeError(`tool "${tool.name}" from ${source} (mcp) duplicates the one from ${existing.source} (${existing.phase}); tool names must be unique`);
      }
    }
    const replaced = new Map<string, Entry>();
    let inserted = false;
    const insert = () => {
      inserted = true;
      this.#entries = replaced;
      for (const tool of tools) this.register(tool, { phase: "mcp", source });
    };
    try {
      for (const [name, entry] of before) {
        if (entry.source === source) {
          if (!inserted) insert();
          continue;
        }
        // A server that had no tools adds its new ones after the other MCP tools.
        if (!inserted && entry.phase !== "mcp") insert();
        replaced.set(name, entry);
      }
      if (!inserted) insert();
    } catch (error) {
      this.#entries = before;
      throw error;
    }
    this.#entries = replaced;
    this.#changed();
  }

  /** Counts changes to the tool set: a session compares it with the last one it recorded. */
  get generation(): number {
    return this.#generation;
  }

  #changed(): void {
    this.#generation += 1;
    this.#snapshot = undefined;
  }

  get(name: string): ToolDefinition | undefined {
    return this.#entries.get(name)?.tool;
  }

  has(name: string): boolean {
    return this.#entries.has(name);
  }

  names(): string[] {
    return [...this.#entries.keys()];
  }

  list(): ToolDefinition[] {
    return [...this.#entries.values()].map((entry) => entry.tool);
  }

  /** The tool schemas offered to a provider, in registration order. */
  providerSchemas(): ProviderToolSchema[] {
    return [...this.#entries.values()].map((entry) => entry.schema);
  }

  /**
   * What `session.started` (and `session.tools.changed`) records of the tool set, including the
   * JSON Schema each tool was offered with. Computed once per change of the set.
   */
  snapshot(): ToolSnapshot[] {
    this.#snapshot ??= [...this.#entries.values()].map(({ tool, schema, phase, source }) => ({
      name: tool.name,
      description: tool.description,
      riskClass: tool.risk,
      schemaDigest: sha256(canonicalJson(schema.parameters)),
      parameters: schema.parameters,
      flags: { serial: tool.serial, idempotent: tool.idempotent, command: typeof tool.command === "function", paths: typeof tool.paths === "function", ...(tool.contained === true ? { contained: true } : {}) },
      maxResultChars: tool.maxResultChars,
      timeoutMs: tool.timeoutMs,
      phase,
      source,
    }));
    return this.#snapshot;
  }
}

import { z } from "zod";
import type { ToolSnapshot } from "../contracts/tools.js";
import { canonicalJson, sha256 } from "../util/digest.js";
import type { ToolDefinition } from "./define-tool.js";

import type { ProviderToolSchema } from "../contracts/tools.js";

export type { ProviderToolSchema };

/**
 * The tools of a runtime, looked up in a `Map` so that a model-supplied name (`__proto__`,
 * `constructor`) can never reach an object prototype.
 */
export class ToolRegistry {
  readonly #tools = new Map<string, ToolDefinition>();
  readonly #schemas = new Map<string, ProviderToolSchema>();

  constructor(tools: readonly ToolDefinition[] = []) {
    for (const tool of tools) this.register(tool);
  }

  /** Adds a tool; a duplicate name is a programming mistake, reported now rather than at call time. */
  register(tool: ToolDefinition): void {
    if (this.#tools.has(tool.name)) throw new TypeError(`a tool named "${tool.name}" is already registered`);
    this.#tools.set(tool.name, tool);
    // zod's own JSON Schema output; `io: "input"` describes what the model must send.
    const parameters = z.toJSONSchema(tool.input, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
    delete parameters.$schema;
    this.#schemas.set(tool.name, { name: tool.name, description: tool.description, parameters });
  }

  get(name: string): ToolDefinition | undefined {
    return this.#tools.get(name);
  }

  has(name: string): boolean {
    return this.#tools.has(name);
  }

  names(): string[] {
    return [...this.#tools.keys()];
  }

  list(): ToolDefinition[] {
    return [...this.#tools.values()];
  }

  /** The tool schemas offered to a provider, in registration order. */
  providerSchemas(): ProviderToolSchema[] {
    return [...this.#schemas.values()];
  }

  /** What `session.started` records of the tool set. */
  snapshot(): ToolSnapshot[] {
    return this.list().map((tool) => ({
      name: tool.name,
      description: tool.description,
      riskClass: tool.risk,
      schemaDigest: sha256(canonicalJson(this.#schemas.get(tool.name)?.parameters ?? {})),
      flags: { serial: tool.serial, idempotent: tool.idempotent, command: typeof tool.command === "function" },
      maxResultChars: tool.maxResultChars,
      timeoutMs: tool.timeoutMs,
    }));
  }
}

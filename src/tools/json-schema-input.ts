import { createRequire } from "node:module";
import type * as AjvProvider from "@modelcontextprotocol/sdk/validation/ajv";
import type { JsonSchemaType, jsonSchemaValidator } from "@modelcontextprotocol/sdk/validation";
import { z } from "zod";
import { isRecord } from "../util/json-value.js";

/**
 * A new JSON Schema validator of the MCP SDK (ajv, with formats, not strict). The SDK is loaded
 * here, on the first schema compiled, rather than when turnlog is imported: ajv and the SDK cost a
 * host that uses no JSON Schema tool a noticeable part of its start-up (docs/performance.md,
 * "Start-up"). Compiling is synchronous, so the SDK's CommonJS build is loaded with `require` (its
 * `exports` map offers one); ajv itself is CommonJS, one copy whichever build loads it.
 *
 * @example
 * const validator = schemaValidator(); // one ajv for all of a server's schemas
 */
export function schemaValidator(): jsonSchemaValidator {
  const { AjvJsonSchemaValidator } = createRequire(import.meta.url)("@modelcontextprotocol/sdk/validation/ajv") as typeof AjvProvider;
  return new AjvJsonSchemaValidator();
}

/**
 * A zod schema for tool arguments that validates them against a JSON Schema, for a tool whose
 * schema is JSON Schema to begin with (an MCP server's). It passes the argument object through
 * unchanged — a `z.record` would rebuild it and silently drop an own `__proto__` key — and reports
 * each JSON Schema error as a zod issue with its path, so a mismatch is a rejected plan the model
 * can read and correct. Compiles the schema once, here; a schema that cannot be compiled throws.
 *
 * Validation is the MCP SDK's own (ajv, with formats, not strict), so arguments are judged as the
 * SDK judges a server's structured output. Keywords that validator does not know are ignored, never
 * a rejection; the server validates the call again anyway.
 *
 * @example
 * const parameters = { type: "object", properties: { a: { type: "number" } }, required: ["a"] };
 * const sum = defineTool({ name: "sum", description: "Adds", risk: "read-only-local",
 *   input: jsonSchemaInput(parameters), parameters, run: ({ a }) => String(a) });
 */
export function jsonSchemaInput(schema: Record<string, unknown>, options: { validator?: jsonSchemaValidator } = {}): z.ZodType<Record<string, unknown>> {
  // One validator (one ajv) can compile many schemas; an MCP connection shares one across its tools.
  const validate = (options.validator ?? schemaValidator()).getValidator<Record<string, unknown>>(schema as JsonSchemaType);
  return z
    .custom<Record<string, unknown>>(isRecord, { message: "expected a JSON object" })
    .superRefine((value, context) => {
      const result = validate(value);
      if (result.valid) return;
      for (const issue of schemaIssues(result.errorMessage ?? "does not match the schema")) {
        context.addIssue({ code: "custom", path: issue.path, message: issue.message });
      }
    });
}

/**
 * Splits the validator's text (ajv's `errorsText`: `data/a/0 must be string, data must have
 * required property 'b'`) into one issue per error. The SDK's validator gives only that text, and
 * per-path issues read as a zod schema's do; a message that itself contains `, data/` would be
 * split wrongly, which only costs readability — the verdict is the validator's.
 *
 * @example
 * schemaIssues("data/a must be number, data must have required property 'b'");
 * // [{ path: ["a"], message: "must be number" }, { path: [], message: "must have required property 'b'" }]
 */
export function schemaIssues(errorText: string): { path: string[]; message: string }[] {
  return errorText.split(/, (?=data[/ ])/).map((part) => {
    const match = /^data(\/\S*)? (.*)$/s.exec(part);
    if (match === null) return { path: [], message: part };
    const pointer = match[1] ?? "";
    // JSON Pointer segments (RFC 6901): `~1` is `/`, `~0` is `~`.
    const path = pointer === "" ? [] : pointer.slice(1).split("/").map((segment) => segment.replaceAll("~1", "/").replaceAll("~0", "~"));
    return { path, message: match[2] ?? part };
  });
}

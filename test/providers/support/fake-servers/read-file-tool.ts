import { jsonSchema, tool } from "ai";

/**
 * One AI SDK tool for driving the fake provider servers through `streamText`: `read_file` answers
 * `contents of <path>` and records each path it was asked for.
 */
export function readFileTool() {
  const ran: string[] = [];
  const readFile = tool({
    description: "Read a file",
    inputSchema: jsonSchema<{ path: string }>({ type: "object", properties: { path: { type: "string" } }, required: ["path"], additionalProperties: false }),
    execute: async ({ path }) => {
      ran.push(path);
      return `contents of ${path}`;
    },
  });
  return { ran, tools: { read_file: readFile } };
}

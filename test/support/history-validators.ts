/**
 * Strict validators for the request rules each provider enforces (WIRE-FORMATS.md), stricter where
 * turnlog promises more (results in call order, IDs unique in a request). Each returns the list of
 * violations, empty when the request is valid; `assert…` throws with all of them.
 */

const toolNamePattern = /^[a-zA-Z0-9_-]{1,64}$/;
const anthropicIdPattern = /^[a-zA-Z0-9_-]+$/;

type Json = Record<string, unknown>;

function isRecord(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * OpenAI Chat Completions: every assistant tool call is answered exactly once by the `tool`
 * messages that immediately follow it (all of them before any other message, in call order); no
 * `tool` message without its call; IDs of at most 40 characters, unique in the request.
 */
export function openAiChatViolations(messages: unknown): string[] {
  const violations: string[] = [];
  if (!Array.isArray(messages)) return ["messages is not an array"];
  const seenIds = new Set<string>();
  let open: string[] = [];
  let openAt = -1;
  const closeOpen = (at: number) => {
    if (open.length > 0) violations.push(`message ${openAt}: tool calls ${open.join(", ")} are not answered before message ${at}`);
    open = [];
  };
  messages.forEach((message: unknown, index) => {
    if (!isRecord(message)) {
      violations.push(`message ${index}: not an object`);
      return;
    }
    const role = message.role;
    if (role === "tool") {
      const id = message.tool_call_id;
      if (typeof id !== "string") violations.push(`message ${index}: tool message without tool_call_id`);
      else if (open[0] === id) open.shift();
      else if (open.includes(id)) {
        violations.push(`message ${index}: tool result ${id} out of call order`);
        open = open.filter((candidate) => candidate !== id);
      } else violations.push(`message ${index}: tool result ${id} answers no call of the preceding assistant message (or answers it twice)`);
      if (typeof message.content !== "string") violations.push(`message ${index}: tool content is not a string`);
      return;
    }
    closeOpen(index);
    if (role === "system" || role === "user") {
      if (typeof message.content !== "string") violations.push(`message ${index}: ${role} content is not a string`);
      return;
    }
    if (role !== "assistant") {
      violations.push(`message ${index}: unknown role ${String(role)}`);
      return;
    }
    if (message.content !== null && typeof message.content !== "string") violations.push(`message ${index}: assistant content is neither a string nor null`);
    if (message.tool_calls === undefined) {
      if (message.content === null) violations.push(`message ${index}: assistant message with neither content nor tool calls`);
      return;
    }
    if (!Array.isArray(message.tool_calls) || message.tool_calls.length === 0) {
      violations.push(`message ${index}: tool_calls is not a non-empty array`);
      return;
    }
    for (const call of message.tool_calls as unknown[]) {
      if (!isRecord(call) || call.type !== "function" || !isRecord(call.function)) {
        violations.push(`message ${index}: a tool call is not { id, type: "function", function }`);
        continue;
      }
      const id = call.id;
      if (typeof id !== "string" || id.length === 0 || id.length > 40) violations.push(`message ${index}: tool call ID ${String(id)} is not 1–40 characters`);
      else if (seenIds.has(id)) violations.push(`message ${index}: tool call ID ${id} is used twice`);
      if (typeof id === "string") seenIds.add(id);
      if (typeof call.function.name !== "string" || !toolNamePattern.test(call.function.name)) violations.push(`message ${index}: tool name ${String(call.function.name)} is invalid`);
      if (typeof call.function.arguments !== "string") violations.push(`message ${index}: arguments are not a string`);
      if (typeof id === "string") open.push(id);
    }
    openAt = index;
  });
  closeOpen(messages.length);
  return violations;
}

/**
 * Anthropic Messages: the first message is `user`; roles strictly alternate; content is
 * non-empty; every `tool_use` is answered by a `tool_result` in the very next user message, whose
 * `tool_result` blocks come first (in call order); no `tool_result` without its `tool_use`; IDs
 * match `^[a-zA-Z0-9_-]+$` and are unique; `input` is an object; thinking blocks open an assistant
 * message.
 */
export function anthropicMessagesViolations(request: unknown): string[] {
  const violations: string[] = [];
  if (!isRecord(request)) return ["request is not an object"];
  if (request.system !== undefined && typeof request.system !== "string") violations.push("system is not a string");
  const messages = request.messages;
  if (!Array.isArray(messages)) return [...violations, "messages is not an array"];
  if (messages.length === 0) return [...violations, "messages is empty"];
  const seenIds = new Set<string>();
  let expected: string[] = [];
  messages.forEach((message: unknown, index) => {
    if (!isRecord(message)) {
      violations.push(`message ${index}: not an object`);
      return;
    }
    const role = message.role;
    if (role !== "user" && role !== "assistant") violations.push(`message ${index}: role ${String(role)}`);
    if (index === 0 && role !== "user") violations.push("the first message is not user");
    if (index > 0 && isRecord(messages[index - 1]) && (messages[index - 1] as Json).role === role) violations.push(`message ${index}: two ${String(role)} messages in a row`);
    const content = message.content;
    const blocks: Json[] =
      typeof content === "string" ? [{ type: "text", text: content }] : Array.isArray(content) ? (content.filter(isRecord) as Json[]) : [];
    if (blocks.length === 0) violations.push(`message ${index}: empty content`);
    if (Array.isArray(content) && blocks.length !== content.length) violations.push(`message ${index}: a content block is not an object`);

    // The results this message owes the previous assistant tool uses, first and in call order.
    const answering = expected;
    expected = [];
    let leading = true;
    let resultIndex = 0;
    blocks.forEach((block, position) => {
      const type = block.type;
      if (type === "tool_result") {
        if (role !== "user") violations.push(`message ${index}: tool_result in an assistant message`);
        if (!leading) violations.push(`message ${index}: tool_result after other content`);
        const id = block.tool_use_id;
        if (answering[resultIndex] === id) resultIndex += 1;
        else violations.push(`message ${index}: tool_result ${String(id)} answers no tool_use of the previous message (or out of order, or twice)`);
        const resultContent = block.content;
        const nonEmpty =
          (typeof resultContent === "string" && resultContent.trim() !== "") ||
          (Array.isArray(resultContent) && resultContent.length > 0 && resultContent.every((part) => isRecord(part) && part.type === "text" && typeof part.text === "string" && part.text.trim() !== ""));
        if (!nonEmpty) violations.push(`message ${index}: tool_result ${String(id)} has empty content`);
        if (block.is_error !== undefined && typeof block.is_error !== "boolean") violations.push(`message ${index}: is_error is not a boolean`);
        return;
      }
      leading = false;
      if (type === "text") {
        if (typeof block.text !== "string" || block.text.trim() === "") violations.push(`message ${index}: empty text block`);
      } else if (type === "tool_use") {
        if (role !== "assistant") violations.push(`message ${index}: tool_use in a user message`);
        const id = block.id;
        if (typeof id !== "string" || !anthropicIdPattern.test(id)) violations.push(`message ${index}: tool_use ID ${String(id)} does not match ^[a-zA-Z0-9_-]+$`);
        else if (seenIds.has(id)) violations.push(`message ${index}: tool_use ID ${id} is used twice`);
        if (typeof id === "string") {
          seenIds.add(id);
          expected.push(id);
        }
        if (typeof block.name !== "string" || !toolNamePattern.test(block.name)) violations.push(`message ${index}: tool name ${String(block.name)} is invalid`);
        if (!isRecord(block.input)) violations.push(`message ${index}: tool_use input is not an object`);
      } else if (type === "thinking" || type === "redacted_thinking") {
        if (role !== "assistant") violations.push(`message ${index}: ${type} in a user message`);
        if (blocks.slice(0, position).some((earlier) => earlier.type !== "thinking" && earlier.type !== "redacted_thinking")) {
          violations.push(`message ${index}: ${type} after other content`);
        }
      } else {
        violations.push(`message ${index}: unknown block type ${String(type)}`);
      }
    });
    if (resultIndex < answering.length) violations.push(`message ${index}: tool_use ${answering.slice(resultIndex).join(", ")} of the previous message not answered here`);
  });
  if (expected.length > 0) violations.push(`the last message has tool_use ${expected.join(", ")} that nothing answers`);
  return violations;
}

/** Throws with every violation when `messages` breaks an OpenAI Chat Completions rule. */
export function assertValidOpenAiChat(messages: unknown): void {
  const violations = openAiChatViolations(messages);
  if (violations.length > 0) throw new Error(`invalid OpenAI Chat Completions request:\n${violations.join("\n")}\n${JSON.stringify(messages, null, 1)}`);
}

/** Throws with every violation when `{ system, messages }` breaks an Anthropic Messages rule. */
export function assertValidAnthropicMessages(request: unknown): void {
  const violations = anthropicMessagesViolations(request);
  if (violations.length > 0) throw new Error(`invalid Anthropic Messages request:\n${violations.join("\n")}\n${JSON.stringify(request, null, 1)}`);
}

/**
 * The AI SDK prompt (`LanguageModelV3Prompt`), as its provider packages turn it into their APIs'
 * requests: system messages only first; user messages of non-empty text parts; every assistant
 * `tool-call` answered exactly once, in call order and with its tool name, by the one `tool`
 * message right after it; no `tool-result` without its call; IDs of 1 to 40 of `[a-zA-Z0-9_-]`
 * (OpenAI's length, Anthropic's characters), unique in the request; `input` a JSON object; text
 * of assistant text parts not empty (Anthropic rejects it).
 */
export function aiSdkViolations(messages: unknown): string[] {
  const violations: string[] = [];
  if (!Array.isArray(messages)) return ["messages is not an array"];
  const seenIds = new Set<string>();
  let open: { id: string; name: string }[] = [];
  let openAt = -1;
  let seenOther = false;
  messages.forEach((message: unknown, index) => {
    if (!isRecord(message) || !Array.isArray(message.content) && message.role !== "system") {
      violations.push(`message ${index}: not an object with content parts`);
      return;
    }
    const role = message.role;
    if (role === "tool") {
      if (openAt !== index - 1) violations.push(`message ${index}: tool message not right after an assistant message with calls`);
      for (const part of message.content as unknown[]) {
        if (!isRecord(part) || part.type !== "tool-result" || !isRecord(part.output) || typeof part.output.value !== "string") {
          violations.push(`message ${index}: a part is not a tool-result with a text output`);
          continue;
        }
        const next = open.shift();
        if (next === undefined || next.id !== part.toolCallId) violations.push(`message ${index}: tool result ${String(part.toolCallId)} answers no open call in call order`);
        else if (next.name !== part.toolName) violations.push(`message ${index}: tool result ${next.id} names tool ${String(part.toolName)}, the call ${next.name}`);
      }
      if (open.length > 0) violations.push(`message ${openAt}: tool calls ${open.map((call) => call.id).join(", ")} are not answered`);
      open = [];
      openAt = -1;
      return;
    }
    if (open.length > 0) violations.push(`message ${openAt}: tool calls ${open.map((call) => call.id).join(", ")} are not answered before message ${index}`);
    open = [];
    openAt = -1;
    if (role === "system") {
      if (seenOther) violations.push(`message ${index}: a system message after other messages`);
      if (typeof message.content !== "string") violations.push(`message ${index}: system content is not a string`);
      return;
    }
    seenOther = true;
    if (role === "user") {
      for (const part of message.content as unknown[]) {
        if (!isRecord(part) || part.type !== "text" || typeof part.text !== "string" || part.text.trim() === "") violations.push(`message ${index}: a user part is not non-empty text`);
      }
      return;
    }
    if (role !== "assistant") {
      violations.push(`message ${index}: unknown role ${String(role)}`);
      return;
    }
    if ((message.content as unknown[]).length === 0) violations.push(`message ${index}: an assistant message without parts`);
    for (const part of message.content as unknown[]) {
      if (!isRecord(part)) {
        violations.push(`message ${index}: a part is not an object`);
        continue;
      }
      if (part.type === "text" && (typeof part.text !== "string" || part.text.trim() === "")) violations.push(`message ${index}: an empty assistant text part`);
      else if (part.type === "reasoning" && typeof part.text !== "string") violations.push(`message ${index}: a reasoning part without text`);
      else if (part.type === "tool-call") {
        const id = part.toolCallId;
        if (typeof id !== "string" || !/^[a-zA-Z0-9_-]{1,40}$/.test(id)) violations.push(`message ${index}: tool call ID ${String(id)} is not 1–40 of [a-zA-Z0-9_-]`);
        else if (seenIds.has(id)) violations.push(`message ${index}: tool call ID ${id} is used twice`);
        if (typeof part.toolName !== "string" || !toolNamePattern.test(part.toolName)) violations.push(`message ${index}: tool name ${String(part.toolName)} is invalid`);
        if (!isRecord(part.input)) violations.push(`message ${index}: tool call input is not an object`);
        if (typeof id === "string") {
          seenIds.add(id);
          open.push({ id, name: String(part.toolName) });
        }
      } else if (part.type !== "text" && part.type !== "reasoning") violations.push(`message ${index}: unknown part type ${String(part.type)}`);
    }
    if (open.length > 0) openAt = index;
  });
  if (open.length > 0) violations.push(`message ${openAt}: tool calls ${open.map((call) => call.id).join(", ")} are not answered`);
  return violations;
}

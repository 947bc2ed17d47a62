/**
 * Secrets that no single-line pattern sees (docs/security.md, "Boundaries"): a key wrapped over
 * several lines (at 64 or 76 columns, or inside a JSON string as `\n`), and a secret inside base64
 * (kubeconfig's `client-key-data`, a base64'd `.env`, a secret manifest's `data:`). Both look at a
 * rewritten view of the text — the lines joined, the blob decoded — with the whole detector, and
 * report the span of the original text that holds what it found.
 *
 * Benign twins stay readable because what is found must be a secret in the view: a wrapped block of
 * git SHAs joins into hexadecimal no rule takes for a key, and base64 images, npm integrity strings
 * and hashes decode to bytes that are not text, which is never scanned.
 */
import type { SecretKind } from "./secret-detector.js";
import { isBase64Code, longestBase64Run } from "./base64-runs.js";

/** A secret's span in a text, with its kind. */
interface Finding {
  kind: SecretKind;
  start: number;
  end: number;
}
/** What a scan of a view reports: the secrets in that view. */
type Scan = (text: string) => readonly Finding[];

/** A line of a wrapped key: key characters only, after optional indentation. */
const wrappedLine = /^[ \t]*([A-Za-z0-9+/=_.-]+)[ \t]*$/;
/** The narrowest wrap the rule believes: PEM wraps at 64, MIME base64 at 76. */
const minimumWrapWidth = 40;

interface Segment {
  /** Where the line's key characters start and end in the text. */
  start: number;
  end: number;
}

/** The lines of `text`, split at real newlines and at the `\n` escapes of JSON text. */
function linesOf(text: string): Segment[] {
  const lines: Segment[] = [];
  const separator = /\r?\n|\\r?\\n/g;
  let lineStart = 0;
  for (let match = separator.exec(text); ; match = separator.exec(text)) {
    const lineEnd = match === null ? text.length : match.index;
    lines.push({ start: lineStart, end: lineEnd });
    if (match === null) break;
    lineStart = match.index + match[0].length;
  }
  return lines;
}

/**
 * Keys wrapped over lines: a run of at least two lines of key characters whose lines but the last
 * have the same width (at least 40), joined and scanned; a finding that crosses a line break is
 * reported over the original lines, newlines included (they become part of the one marker).
 */
export function scanWrappedSecrets(text: string, scan: Scan, report: (finding: Finding) => void): void {
  if (!text.includes("\n")) return;
  const lines = linesOf(text);
  let index = 0;
  while (index < lines.length) {
    const line = lines[index]!;
    const first = line.end - line.start < minimumWrapWidth ? undefined : keyPart(text, line);
    if (first === undefined || first.end - first.start < minimumWrapWidth) {
      index += 1;
      continue;
    }
    const width = first.end - first.start;
    const block: Segment[] = [first];
    let next = index + 1;
    for (; next < lines.length; next += 1) {
      const part = keyPart(text, lines[next]!);
      if (part === undefined || part.end - part.start > width) break;
      block.push(part);
      if (part.end - part.start < width) {
        next += 1;
        break;
      }
    }
    if (block.length >= 2) reportJoined(text, block, scan, report);
    index = Math.max(next - (block.length >= 2 ? 0 : 1), index + 1);
  }
}

function keyPart(text: string, line: Segment): Segment | undefined {
  if (line.end - line.start < 1 || line.end - line.start > 4096) return undefined;
  const match = wrappedLine.exec(text.slice(line.start, line.end));
  if (match === null) return undefined;
  const start = line.start + match[0].indexOf(match[1]!);
  return { start, end: start + match[1]!.length };
}

function reportJoined(text: string, block: readonly Segment[], scan: Scan, report: (finding: Finding) => void): void {
  const joined = block.map((part) => text.slice(part.start, part.end)).join("");
  // Where each joined character came from, to map a finding back.
  const origins: number[] = [];
  for (const part of block) for (let offset = part.start; offset < part.end; offset += 1) origins.push(offset);
  const breaks = new Set<number>();
  let length = 0;
  for (const part of block.slice(0, -1)) {
    length += part.end - part.start;
    breaks.add(length);
  }
  for (const finding of scan(joined)) {
    let crosses = false;
    for (const position of breaks) if (position > finding.start && position < finding.end) crosses = true;
    if (!crosses) continue;
    report({ kind: finding.kind, start: origins[finding.start]!, end: origins[finding.end - 1]! + 1 });
  }
}

/** The shortest base64 run worth decoding: long enough to hold a credential in a line of text. */
const minimumEncodedLength = 24;

/** Whether a UTF-16 code is a hexadecimal digit. */
function isHexCode(code: number): boolean {
  return (code >= 48 && code <= 57) || (code >= 65 && code <= 70) || (code >= 97 && code <= 102);
}

/**
 * The base64 runs of `text` worth decoding: maximal runs of base64 characters with their `=`
 * padding, a multiple of 4 long, not touching `_`, `-` or `.` (an identifier, base64url, a JWT),
 * and not hexadecimal (hashes and SHAs, the commonest long runs in a tool output, are never base64
 * of text). Found by hand, each character read once: a regular expression for it, with or without
 * look-arounds, cost several times more on a 12 000-character output.
 */
export function base64Runs(text: string): { start: number; end: number }[] {
  // A run kept is at least 24 long with at most two `=` of padding: 22 base64 characters at least.
  if (longestBase64Run(text) < minimumEncodedLength - 2) return [];
  return base64RunsReference(text);
}

/** `base64Runs` without asking for the longest run first: every character read (the reference). */
export function base64RunsReference(text: string): { start: number; end: number }[] {
  const runs: { start: number; end: number }[] = [];
  let index = 0;
  while (index < text.length) {
    if (!isBase64Code(text.charCodeAt(index))) {
      index += 1;
      continue;
    }
    const start = index;
    let hexadecimal = true;
    for (; index < text.length; index += 1) {
      const code = text.charCodeAt(index);
      if (!isBase64Code(code)) break;
      if (hexadecimal && !isHexCode(code)) hexadecimal = false;
    }
    let end = index;
    while (end < text.length && end - index < 2 && text.charCodeAt(end) === 61) end += 1;
    index = end;
    if (hexadecimal || end - start < minimumEncodedLength || (end - start) % 4 !== 0) continue;
    const before = text[start - 1];
    const after = text[end];
    if ((before !== undefined && /[_.=-]/.test(before)) || (after !== undefined && /[_.=-]/.test(after))) continue;
    runs.push({ start, end });
  }
  return runs;
}

/** How deep base64 inside base64 is followed (a kubeconfig in a secret manifest is two). */
const maximumDepth = 2;

/** Whether decoded bytes are text: almost all printable, and valid UTF-8. */
function decodedText(bytes: Buffer): string | undefined {
  let readable = 0;
  for (const byte of bytes) if ((byte >= 0x20 && byte !== 0x7f) || byte === 0x0a || byte === 0x0d || byte === 0x09) readable += 1;
  if (readable / bytes.length < 0.95) return undefined;
  const text = bytes.toString("utf8");
  return text.includes("\uFFFD") ? undefined : text;
}

/**
 * Base64 blobs that decode to text holding a secret: the blob is the finding. Only runs of at least
 * 24 characters (long enough to hold a credential in a line of text) are decoded, and only text is scanned, so hashes, integrity strings and images
 * (which decode to bytes) cost one decode and stay readable.
 */
export function scanEncodedSecrets(text: string, scan: Scan, report: (start: number, end: number) => void, depth = 0): void {
  if (depth >= maximumDepth) return;
  for (const run of base64Runs(text)) {
    const decoded = decodedText(Buffer.from(text.slice(run.start, run.end), "base64"));
    if (decoded === undefined) continue;
    let found = scan(decoded).length > 0;
    if (!found) scanEncodedSecrets(decoded, scan, () => (found = true), depth + 1);
    if (found) report(run.start, run.end);
  }
}

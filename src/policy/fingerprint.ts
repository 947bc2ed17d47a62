import { canonicalJson, sha256 } from "../util/digest.js";

/**
 * What an approval binds to: tool name + canonical arguments. A call whose arguments changed is
 * not covered by an approval given for the old ones.
 */
export function callFingerprint(tool: string, input: unknown): string {
  return sha256(canonicalJson({ tool, input: input ?? {} }));
}

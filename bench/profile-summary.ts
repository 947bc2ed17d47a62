/**
 * Sums a V8 CPU profile (`node --cpu-prof`) by function: self time, and inclusive time counted once
 * per sample however often a function is on the stack; shares of all samples and of the samples
 * that were not idle. How docs/performance.md's profile tables are made.
 *
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/profile-realistic.ts relaxed 200 6
 *   node --import tsx bench/profile-summary.ts /tmp/prof/<the largest .cpuprofile> [top=40]
 */
import { readFileSync } from "node:fs";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

const [file, topArgument = "40"] = process.argv.slice(2);
if (file === undefined) throw new Error("usage: bench/profile-summary.ts <file.cpuprofile> [top]");
const top = Number(topArgument);
const profile = JSON.parse(readFileSync(file, "utf8")) as { nodes: ProfileNode[]; samples: number[] };
const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
const parents = new Map<number, number>();
for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);
const nameOf = (node: ProfileNode) => `${node.callFrame.functionName || "(anonymous)"} ${node.callFrame.url.replace(/.*\//, "")}:${node.callFrame.lineNumber + 1}`;

const self = new Map<string, number>();
const inclusive = new Map<string, number>();
let idle = 0;
for (const sample of profile.samples) {
  const leaf = nodes.get(sample)!;
  if (leaf.callFrame.functionName === "(idle)") idle += 1;
  self.set(nameOf(leaf), (self.get(nameOf(leaf)) ?? 0) + 1);
  const seen = new Set<string>();
  for (let id: number | undefined = sample; id !== undefined; id = parents.get(id)) {
    const name = nameOf(nodes.get(id)!);
    if (seen.has(name)) continue;
    seen.add(name);
    inclusive.set(name, (inclusive.get(name) ?? 0) + 1);
  }
}
const total = profile.samples.length;
const busy = total - idle;
const share = (count: number, of: number) => `${((100 * count) / of).toFixed(1).padStart(5)}%`;
console.log(`${total} samples, ${idle} idle`);
for (const [title, counts] of [["self", self], ["inclusive", inclusive]] as const) {
  console.log(`\n${title}: of all, of busy`);
  for (const [name, count] of [...counts].sort((left, right) => right[1] - left[1]).slice(0, top)) console.log(`${share(count, total)} ${share(count, busy)}  ${name}`);
}

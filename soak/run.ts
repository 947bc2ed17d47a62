/**
 * `npm run soak`: every fault family of docs/reliability.md at its full count, one after another,
 * each printing one summary line, then a final `N passed, N failed` (cases, over all families).
 * Not part of `npm test`: each family has a CI-sized test of its own in test/reliability/.
 *
 *   npm run soak                                   every family, full counts, seed 1
 *   npm run soak -- --seed 7                       another seed
 *   npm run soak -- --family fuzz,disk             some families only
 *   npm run soak -- --count kill=200               another count for a family (repeatable)
 *
 * Exits 1 when any case failed.
 */
import { parseArgs } from "node:util";
import type { SoakFamily, SoakResult } from "./family.js";
import { families } from "./families/index.js";

const { values: options } = parseArgs({
  options: {
    seed: { type: "string", default: "1" },
    family: { type: "string", default: "" },
    count: { type: "string", multiple: true, default: [] },
  },
});

const seed = Number(options.seed);
if (!Number.isSafeInteger(seed)) throw new Error(`--seed must be an integer, not ${options.seed}`);
const chosen = options.family === "" ? families : options.family.split(",").map((name) => {
  const family = families.find((candidate) => candidate.name === name);
  if (family === undefined) throw new Error(`no family ${name}: the families are ${families.map((f) => f.name).join(", ")}`);
  return family;
});
const counts = new Map<string, number>();
for (const entry of options.count) {
  const match = /^([a-z-]+)=(\d+)$/.exec(entry);
  if (match === null) throw new Error(`--count takes family=N, not ${entry}`);
  counts.set(match[1]!, Number(match[2]));
}

async function runFamily(family: SoakFamily): Promise<SoakResult> {
  const count = counts.get(family.name) ?? family.soakCount;
  const started = performance.now();
  let result: SoakResult;
  try {
    result = await family.run({ seed, count, log: (line) => process.stderr.write(`[${family.name}] ${line}\n`) });
  } catch (error) {
    result = { passed: 0, failed: 1, summary: "the family itself threw", failures: [String((error as Error)?.stack ?? error)] };
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  for (const failure of result.failures) process.stderr.write(`[${family.name}] FAILED: ${failure}\n`);
  console.log(`${family.name}: ${result.passed} passed, ${result.failed} failed in ${seconds} s (seed ${seed}, count ${count}): ${result.summary}`);
  return result;
}

let passed = 0;
let failed = 0;
for (const family of chosen) {
  const result = await runFamily(family);
  passed += result.passed;
  failed += result.failed;
}
console.log(`${passed} passed, ${failed} failed`);
process.exitCode = failed === 0 ? 0 : 1;

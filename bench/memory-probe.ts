/**
 * Peak memory of a whole bench script, without touching the script: preloaded by bench/suite.ts
 * (`node --import tsx --import ./bench/memory-probe.ts bench/long-session.ts …`), it records, when
 * the process exits, the peak RSS (the kernel's own maximum, `ru_maxrss`: exact) and the peak heap
 * used (sampled every 50 ms: a shorter spike can be missed) under the id prefix given by
 * `TURNLOG_BENCH_PROBE` (e.g. `longSession` → `longSession.peakRss`, `longSession.peakHeap`).
 */
import { recordResult } from "./results.js";

const prefix = process.env.TURNLOG_BENCH_PROBE;
if (prefix !== undefined && prefix !== "") {
  let peakHeap = 0;
  const sample = () => {
    peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed);
  };
  // unref: the probe must never keep a finished script alive.
  setInterval(sample, 50).unref();
  process.on("exit", () => {
    sample();
    const label = process.env.TURNLOG_BENCH_PROBE_LABEL ?? prefix;
    recordResult(`${prefix}.peakRss`, `${label}: peak RSS`, process.resourceUsage().maxRSS / 1024, "MB");
    recordResult(`${prefix}.peakHeap`, `${label}: peak heap used (sampled every 50 ms)`, peakHeap / 2 ** 20, "MB");
  });
}

import type { SoakFamily } from "../family.js";
import { disk } from "./disk.js";
import { fuzzFamily } from "./fuzz.js";
import { killFamily } from "./kill.js";
import { postgresFamily } from "./postgres.js";
import { stall } from "./stall.js";
import { time } from "./time.js";

/**
 * Every family, in the order `npm run soak` runs them: the quick, in-process ones first, then the
 * ones that start child processes. Each lives in a module of its own.
 */
export const families: SoakFamily[] = [time, fuzzFamily, stall, disk, killFamily, postgresFamily];

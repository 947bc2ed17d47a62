import type { SoakFamily } from "../family.js";
import { fuzzFamily } from "./fuzz.js";
import { stall } from "./stall.js";
import { time } from "./time.js";

/** Every family, in the order `npm run soak` runs them. Each lives in a module of its own. */
export const families: SoakFamily[] = [time, fuzzFamily, stall];

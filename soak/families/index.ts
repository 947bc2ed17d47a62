import type { SoakFamily } from "../family.js";
import { killFamily } from "./kill.js";

/** Every family, in the order `npm run soak` runs them. Each lives in a module of its own. */
export const families: SoakFamily[] = [killFamily];

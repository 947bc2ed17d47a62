import type { SoakFamily } from "../family.js";
import { disk } from "./disk.js";

/** Every family, in the order `npm run soak` runs them. Each lives in a module of its own. */
export const families: SoakFamily[] = [disk];

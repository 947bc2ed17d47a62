import type { SoakFamily } from "../family.js";
import { postgresFamily } from "./postgres.js";

/** Every family, in the order `npm run soak` runs them. Each lives in a module of its own. */
export const families: SoakFamily[] = [postgresFamily];

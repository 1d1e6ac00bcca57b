import { fixedMode, oracleMode, plainMode } from "./modes.js";
import type { ModeSpec } from "./modes.js";

/** The modes every benchmark compares, side by side. */
export const benchModes: readonly ModeSpec[] = [plainMode, fixedMode(100), oracleMode];

import { fixedMode, oracleMode, plainMode } from "./modes.js";
import type { ModeSpec } from "./modes.js";

/** Adaptive hedging with its defaults, or with a smaller share of extra load. */
export function adaptiveMode(maxExtraLoad?: number): ModeSpec {
  return {
    name: maxExtraLoad === undefined ? "adaptive" : `adaptive, maxExtraLoad ${maxExtraLoad}`,
    kind: "hedging",
    hedging: { crossRegion: { threshold: maxExtraLoad === undefined ? "adaptive" : { mode: "adaptive", maxExtraLoad } } },
  };
}

/** Adaptive hedging with Thompson-sampling routing. */
export const thompsonMode: ModeSpec = {
  name: "adaptive + thompson",
  kind: "hedging",
  hedging: { crossRegion: { threshold: "adaptive", routing: "thompson" } },
};

/** The modes every benchmark compares, side by side. */
export const benchModes: readonly ModeSpec[] = [plainMode, fixedMode(100), adaptiveMode(), adaptiveMode(0.02), thompsonMode, oracleMode];

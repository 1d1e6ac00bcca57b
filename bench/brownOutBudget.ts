// npm run bench:brown-out-budget: the brown-out of the preferred region (every read +300 ms for 20 s) with
// the budget at its default and lifted, every mode at once on one emulator. The primary goes where the SDK
// sends it, so in a brown-out only the reads the budget lets hedge are rescued: this prints what lifting
// it buys and costs (the README's "The budget" and docs/tuning.md quote it). The second table is a brown-out longer
// than the SDK's 2 s per-attempt timeout with its partition-level circuit breaker on: plain trips the breaker
// and moves its reads, and a hedge that wins hides the timeout the breaker counts.
import { brownOutTable, defaultBrownOut, runBrownOut } from "./suites/tail.js";
import type { BrownOutSettings } from "./suites/tail.js";
import { fixedMode, oracleMode, plainMode } from "./support/modes.js";
import type { ModeSpec } from "./support/modes.js";
import { adaptiveMode } from "./support/benchModes.js";
import type { CrossRegionHedgingOptions } from "../src/client/hedgingHttpClient.js";

function budgetMode(name: string, threshold: "adaptive" | number, budget: NonNullable<CrossRegionHedgingOptions["budget"]>): ModeSpec {
  return { name, kind: "hedging", hedging: { crossRegion: { threshold, budget } } };
}

const modes: readonly ModeSpec[] = [
  plainMode,
  fixedMode(100),
  adaptiveMode(),
  budgetMode("adaptive, maxExtraLoad 0.5", "adaptive", { maxExtraLoad: 0.5 }),
  budgetMode("adaptive, maxExtraLoad 1", "adaptive", { maxExtraLoad: 1 }),
  budgetMode("adaptive, budget: false", "adaptive", false),
  budgetMode("fixed 100 ms, maxExtraLoad 1", 100, { maxExtraLoad: 1 }),
  oracleMode,
];
console.log(brownOutTable(await runBrownOut(modes, defaultBrownOut)));
const beyondTimeout: BrownOutSettings = { ...defaultBrownOut, brownOutSeconds: 15, delayMs: 2500, circuitBreaker: true };
console.log(`\n${brownOutTable(await runBrownOut(modes, beyondTimeout), beyondTimeout)}`);

// npm run bench:budget-shortfall [-- <seed>]: the straggler case (10 % of East's point reads +1 s) at 30 reads/s,
// fixed 100 ms beside the adaptive threshold, both with a hedge budget of SHARE (default 0.13, near what the
// stragglers need, so that the balance runs short now and then; 0.11 keeps it short). Prints, per mode, the
// reads over 500 ms (stragglers that went unhedged), p99, p99.9, the extra requests and the reads whose hedge
// the budget refused for good. To compare two builds, run it in a worktree of each, alternating.
import { runCountScenario, stragglers } from "./suites/tail.js";
import { fixedMode } from "./support/modes.js";
import type { ModeSpec } from "./support/modes.js";

const share = Number(process.env.SHARE ?? 0.13);
if (!(share > 0 && share <= 1)) throw new RangeError(`SHARE must be above 0 and at most 1; got ${process.env.SHARE}`);
const budget = { maxExtraLoad: share };
const modes: ModeSpec[] = [
  { name: fixedMode(100).name, kind: "hedging", hedging: { crossRegion: { threshold: 100, budget } } },
  { name: "adaptive", kind: "hedging", hedging: { crossRegion: { threshold: "adaptive", budget } } },
];
const rows = await runCountScenario(stragglers, modes, { seed: Number(process.argv[2] ?? 7) });
for (const row of rows) {
  const unhedged = row.latencySamples.filter((latency) => latency > 500).length;
  console.log(
    `${row.mode} (budget ${share}): reads over 500 ms ${unhedged}, p99 ${row.latency.p99.toFixed(1)} ms, p99.9 ${row.latency.p999.toFixed(1)} ms, ` +
      `extra ${(row.extraRequests * 100).toFixed(1)} %, refused for good ${row.refusedHedges}`,
  );
}

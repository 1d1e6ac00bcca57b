// npm run bench:tail — issue 3's tail-latency benchmark: the same 1000 point
// reads through plain @azure/cosmos and through crossRegionHedgingPolicy, in
// one run, while 10 % of reads in the preferred region straggle for 1 s.
import { defaultStragglerSettings, runStragglerSuite, tailTable } from "./suites/tail.js";

const settings = defaultStragglerSettings;
const threshold = 100;
console.log(
  `Stragglers: ${settings.reads} point reads, concurrency ${settings.concurrency}, ` +
    `${settings.stragglerShare * 100}% delayed ${settings.stragglerDelayMs} ms in the preferred region, ` +
    `next region ${settings.nextRegionLatencyMs} ms away, hedge threshold ${threshold} ms.`,
);
const rows = await runStragglerSuite([
  { name: "off (plain @azure/cosmos)" },
  { name: `fixed ${threshold} ms`, hedging: { crossRegion: { threshold } } },
]);
console.log(tailTable(rows));
const hedged = rows[1];
if (hedged !== undefined) {
  const target = threshold + settings.nextRegionLatencyMs + 15;
  console.log(
    `\nTarget: hedged p99 <= ${target} ms (got ${hedged.latency.p99.toFixed(1)}), ` +
      `extra requests <= ${((settings.stragglerShare + 0.02) * 100).toFixed(0)}% (got ${(hedged.extraRequests * 100).toFixed(1)}%).`,
  );
}

// npm run bench:tail — issue 3's tail-latency benchmark: the same point reads,
// offered at the same open-loop rate, through plain @azure/cosmos, through
// crossRegionHedgingPolicy and through the oracle, in one run, while 10 % of
// reads in the preferred region straggle for 1 s.
import { fixedMode, oracleMode, plainMode } from "./support/modes.js";
import { runCountScenario, stragglers, tailCaption, tailTable } from "./suites/tail.js";

const threshold = 100;
console.log(`10% of reads in the preferred region take 1 s more, the next region is 30 ms away; hedge threshold ${threshold} ms.`);
const rows = await runCountScenario(stragglers, [plainMode, fixedMode(threshold), oracleMode]);
console.log(`${tailCaption(rows)}\n\n${tailTable(rows)}`);
const hedged = rows[1];
if (hedged !== undefined) {
  console.log(
    `\nTarget: hedged p99 <= ${threshold + 30 + 15} ms (got ${hedged.latency.p99.toFixed(1)}), ` +
      `extra requests <= 12% (got ${(hedged.extraRequests * 100).toFixed(1)}%).`,
  );
}

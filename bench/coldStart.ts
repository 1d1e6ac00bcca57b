// npm run bench:cold-start — issue 4's cold-start benchmark: 50 fresh clients'
// time to first read, with and without metadata hedging, while the preferred
// region stalls the Collection and PartitionKeyRange reads for 3 s.
import { coldStartTable, defaultColdStartSettings, runColdStartSuite } from "./suites/coldStart.js";

const settings = defaultColdStartSettings;
console.log(
  `Cold start: ${settings.clients} fresh clients (${settings.batch} at a time per mode), metadata reads in the preferred region ` +
    `delayed ${settings.metadataDelayMs} ms, next region ${settings.nextRegionLatencyMs} ms away, threshold ${settings.threshold} ms.`,
);
const rows = await runColdStartSuite(settings);
console.log(coldStartTable(rows));
const hedged = rows[1];
if (hedged !== undefined) {
  console.log(`\nTarget: hedged p99 < ${settings.threshold + 200} ms (got ${hedged.latency.p99.toFixed(0)}).`);
}

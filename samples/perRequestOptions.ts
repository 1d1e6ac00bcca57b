/**
 * Per-request hedging choices with `hedgingRequestOptions`: exclude regions,
 * pin a request to one region, turn hedging off, and merge the choices into
 * request options of your own; and `withRequestHedgingOptions` for every
 * request of a block of code that cannot take request options.
 *
 * Run: npm run sample -- perRequestOptions
 */
import { performance } from "node:perf_hooks";
import { CosmosClient } from "@azure/cosmos";
import { hedgingRequestOptions, withHedging, withRequestHedgingOptions } from "cosmos-hedging";
import type { HedgeDiagnostics } from "cosmos-hedging";
import { openSampleAccount, sampleContainer, since, slowDownRegion } from "./support/account.js";

// Three regions: one to slow down, one to hedge to, and one more to steer to.
const account = await openSampleAccount(3);
const { endpoint, key, preferredLocations } = account;
const [slowRegion, secondRegion] = preferredLocations as [string, string];

// Every request the hedging policies consider is recorded here, so that each step can say where its requests went.
const records: HedgeDiagnostics[] = [];
const options = withHedging(
  { endpoint, key, connectionPolicy: { preferredLocations } },
  { crossRegion: { threshold: 100 }, onDiagnostics: (record) => records.push(record) },
);
const client = new CosmosClient(options);

/** Runs one step and prints how long it took and which region served each of its requests. */
async function step(label: string, work: () => Promise<unknown>): Promise<void> {
  records.length = 0;
  const start = performance.now();
  await work();
  const ms = since(start);
  const served = records.map((record) => {
    const how = record.terminalState === "skipped" ? `not hedged: ${record.skipReason}` : record.terminalState;
    const rerouted = record.routing?.sdkRegion !== undefined ? `, moved off ${record.routing.sdkRegion}` : "";
    return `${record.operation} → ${record.winningRegion} (${how}${rerouted})`;
  });
  console.log(`${label.padEnd(46)} ${String(ms).padStart(4)} ms  ${served.join("; ")}`);
}

try {
  const container = sampleContainer(client);
  await container.item("item-0", "pk-0").read();

  const delayMs = 600;
  slowDownRegion(account, { region: slowRegion, delayMs, operations: ["pointRead", "query", "queryPlan"] }, options);
  console.log(`\n${slowRegion}, the preferred region, now answers reads and queries ${delayMs} ms late.\n`);

  const item = container.item("item-1", "pk-1");
  await step("default: hedged after 100 ms", () => item.read());
  await step(`excludedRegions: [${slowRegion}]`, () => item.read(hedgingRequestOptions({ excludedRegions: [slowRegion] })));
  await step(`excludedRegions: [${secondRegion}]`, () => item.read(hedgingRequestOptions({ excludedRegions: [secondRegion] })));
  const pinned = preferredLocations.at(-1)!;
  await step(`region: ${pinned} (pinned, never hedged)`, () => item.read(hedgingRequestOptions({ region: pinned })));
  await step("hedging: false (waits for the slow region)", () => item.read(hedgingRequestOptions({ hedging: false })));

  // Your own request options keep their fields and headers; the hedging choices are added to initialHeaders.
  const queryOptions = hedgingRequestOptions(
    { excludedRegions: [slowRegion] },
    { maxItemCount: 5, initialHeaders: { "x-app-correlation-id": "sample-42" } },
  );
  console.log(`\nmerged request options: ${JSON.stringify(queryOptions)}`);
  await step("query with merged options", () => container.items.query("SELECT * FROM c WHERE c.pk = 'pk-2'", queryOptions).fetchAll());

  // For code that makes requests without taking request options: the choices follow its async work.
  await step(`withRequestHedgingOptions excluding ${slowRegion}`, () =>
    withRequestHedgingOptions({ excludedRegions: [slowRegion] }, async () => {
      await container.item("item-2", "pk-2").read();
      await container.items.query("SELECT * FROM c WHERE c.pk = 'pk-0'").fetchAll();
    }),
  );
} finally {
  client.dispose();
  await account.close();
}

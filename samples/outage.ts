/**
 * Steering around an outage at runtime: the hedging client's `regions` (a
 * `RegionCache`) takes a new preferred-region order and client-level excluded
 * regions while the client runs, and the next request follows them, primary
 * and hedges alike. No new client, no restart.
 *
 * Run: npm run sample -- outage
 */
import { performance } from "node:perf_hooks";
import { CosmosClient } from "@azure/cosmos";
import { createHedgingHttpClient, masterKeySigner } from "cosmos-hedging";
import type { HedgeDiagnostics } from "cosmos-hedging";
import { openSampleAccount, sampleContainer, sampleItems, since, slowDownRegion } from "./support/account.js";

// Three regions: one to slow down, one to hedge to, and one more to steer to.
const account = await openSampleAccount(3);
const { endpoint, key, preferredLocations } = account;
const [first, second, third] = preferredLocations as [string, string, string];

const records: HedgeDiagnostics[] = [];
// Built directly rather than through withHedging, to keep a typed handle on `hedging.regions`.
const hedging = createHedgingHttpClient({
  crossRegion: { threshold: 100 },
  preferredRegions: preferredLocations,
  signer: masterKeySigner(key),
  onDiagnostics: (record) => records.push(record),
});
const client = new CosmosClient({ endpoint, key, connectionPolicy: { preferredLocations }, httpClient: hedging });

/** Reads a few items and prints latency, serving regions and how many requests went to each region. */
async function phase(title: string): Promise<void> {
  records.length = 0;
  const container = sampleContainer(client);
  const latencies: number[] = [];
  for (const item of sampleItems.slice(0, 4)) {
    const start = performance.now();
    await container.item(item.id, item.pk).read();
    latencies.push(since(start));
  }
  const served = tally(records.map((record) => record.winningRegion ?? "none"));
  const sentTo = tally(records.flatMap((record) => record.arms.map((arm) => arm.region)));
  console.log(`\n${title}`);
  console.log(`  hedge order: ${hedging.regions.applicableRegions("read").map((region) => region.name).join(" → ")}`);
  console.log(`  4 reads: ${latencies.join(", ")} ms; served by ${served}; requests sent to ${sentTo}`);
}

function tally(names: string[]): string {
  const counts = new Map<string, number>();
  for (const name of names) counts.set(name, (counts.get(name) ?? 0) + 1);
  return [...counts].map(([name, count]) => `${name} ×${count}`).join(", ");
}

try {
  await sampleContainer(client).item("item-0", "pk-0").read();
  await phase(`1. Healthy: ${first} serves every read.`);

  const brownOut = slowDownRegion(account, { region: first, delayMs: 1500, operations: ["pointRead"] }, hedging);
  await phase(`2. ${first} browns out (+1500 ms). Hedging hides it, at the price of a second request per read.`);

  hedging.regions.setPreferredRegions([second, first, third]);
  await phase(`3. regions.setPreferredRegions([${second}, ${first}, ${third}]): reads go to ${second} first, one request each.`);

  hedging.regions.setExcludedRegions([first]);
  const hiccup = slowDownRegion(account, { region: second, delayMs: 300, operations: ["pointRead"] }, hedging);
  await phase(
    `4. regions.setExcludedRegions([${first}]), and ${second} hiccups (+300 ms): hedges skip ${first} and go to ${third}.`,
  );
  hiccup();

  brownOut();
  hedging.regions.setExcludedRegions([]);
  hedging.regions.setPreferredRegions(preferredLocations);
  await phase(`5. ${first} has recovered: the exclusion is lifted and the original order restored.`);
} finally {
  client.dispose();
  await account.close();
}

/**
 * Quick start: hedge the reads of a `CosmosClient` across regions with
 * `withHedging`. The preferred region is made slow; each read still answers in
 * about the hedging threshold, from the next preferred region, and the
 * hedging detection record on the response says what happened: where the
 * read went and why, which regions answered, and what it cost, which is
 * final only once the slow region's losing arm has answered too.
 *
 * Run: npm run sample -- quickstart
 */
import { performance } from "node:perf_hooks";
import { CosmosClient } from "@azure/cosmos";
import { getHedgeDiagnostics, getHedgingDetection, withHedging } from "cosmos-hedging";
import type { HedgingDetection } from "cosmos-hedging";
import { openSampleAccount, sampleContainer, sampleItems, since, slowDownRegion } from "./support/account.js";

const account = await openSampleAccount();
const { endpoint, key, preferredLocations } = account;

// A read still unanswered after 100 ms is also sent to the next preferred region; the first answer wins.
const options = withHedging({ endpoint, key, connectionPolicy: { preferredLocations } }, { crossRegion: { threshold: 100 } });
const client = new CosmosClient(options);

try {
  const container = sampleContainer(client);
  // The first read also loads the account and container metadata; keep it out of the timings.
  await container.item("item-0", "pk-0").read();

  const slowRegion = preferredLocations[0]!;
  const delayMs = 2000;
  slowDownRegion(account, { region: slowRegion, delayMs, operations: ["pointRead"] }, options);
  console.log(`\n${slowRegion}, the preferred region, now answers point reads ${delayMs} ms late.\n`);

  const operations: { id: string; detection: HedgingDetection }[] = [];
  for (const { id, pk } of sampleItems.slice(1, 4)) {
    const start = performance.now();
    const response = await container.item(id, pk).read();
    const ms = since(start);
    // The whole operation, as in .NET and Python: where it went and why, who answered, and what it cost so far.
    const detection = getHedgingDetection(response);
    const requested = detection?.requestedRegions().map(({ region, reason }) => `${region} (${reason})`).join(", ");
    // A losing arm left to finish is billed too; its charge is known only when it answers, after the read returned.
    const charge = detection === undefined ? "unknown" : `${detection.requestCharge} RU${detection.final ? "" : " so far, not final"}`;
    console.log(
      `read ${id}: ${response.statusCode} in ${ms} ms; served by ${getHedgeDiagnostics(response)?.winningRegion}, ` +
        `hedgingStarted=${detection?.hedgingStarted()}, requested ${requested}; ${charge}`,
    );
    if (detection !== undefined) operations.push({ id, detection });
  }
  // Once every drained arm has answered (or been cut off), each total is the true cost.
  for (const { id, detection } of operations) {
    await detection.settled;
    console.log(`read ${id} in all: ${detection.requestCharge} RU (replies from ${detection.respondedRegions().join(", ")})`);
  }
  console.log(`\nWithout hedging, each of these reads would have waited the ${delayMs} ms.`);
} finally {
  client.dispose();
  await account.close();
}

/**
 * Quick start: hedge the reads of a `CosmosClient` across regions with
 * `withHedging`. The preferred region is made slow; each read still answers in
 * about the hedging threshold, from the next preferred region, and the
 * diagnostics in `response.headers` say what happened.
 *
 * Run: npm run sample -- quickstart
 */
import { performance } from "node:perf_hooks";
import { CosmosClient } from "@azure/cosmos";
import { getHedgeDiagnostics, withHedging } from "cosmos-hedging";
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

  for (const { id, pk } of sampleItems.slice(1, 4)) {
    const start = performance.now();
    const response = await container.item(id, pk).read();
    const ms = since(start);
    const diagnostics = getHedgeDiagnostics(response.headers);
    console.log(
      `read ${id}: ${response.statusCode} in ${ms} ms; served by ${diagnostics?.winningRegion}, ` +
        `hedgeWon=${diagnostics?.hedgeWon}, totalRequestCharge=${diagnostics?.totalRequestCharge} RU ` +
        `(arms: ${diagnostics?.arms.map((arm) => `${arm.region} ${arm.outcome}`).join(", ")})`,
    );
  }
  console.log(`\nWithout hedging, each of these reads would have waited the ${delayMs} ms.`);
} finally {
  client.dispose();
  await account.close();
}

/**
 * Reading what hedging did: the `HedgeDiagnostics` record of one response
 * (from `response.headers`, or from an error), and an `onDiagnostics`
 * callback that aggregates every record into counts you could export as
 * metrics.
 *
 * Run: npm run sample -- diagnostics
 */
import { CosmosClient, ErrorResponse } from "@azure/cosmos";
import { getHedgeDiagnostics, withHedging } from "cosmos-hedging";
import type { HedgeDiagnostics } from "cosmos-hedging";
import { openSampleAccount, sampleContainer, sampleItems, slowDownRegion } from "./support/account.js";

/** What an application might count for its dashboards. */
class HedgingCounters {
  requests = 0;
  hedgesSent = 0;
  requestCharge = 0;
  readonly byOutcome = new Map<string, number>();
  readonly byServingRegion = new Map<string, number>();

  record(diagnostics: HedgeDiagnostics): void {
    this.requests++;
    // Every arm beyond the primary is an extra request, and its charge is paid whether it wins or not.
    this.hedgesSent += Math.max(0, diagnostics.arms.length - 1);
    this.requestCharge += diagnostics.totalRequestCharge;
    const outcome = diagnostics.terminalState === "skipped" ? `skipped (${diagnostics.skipReason})` : diagnostics.terminalState;
    increment(this.byOutcome, `${diagnostics.policy} ${outcome}`);
    increment(this.byServingRegion, diagnostics.winningRegion ?? "none");
  }
}

function increment(counts: Map<string, number>, key: string): void {
  counts.set(key, (counts.get(key) ?? 0) + 1);
}

function show(counts: Map<string, number>): string {
  return [...counts].map(([key, count]) => `${key}: ${count}`).join(", ");
}

const account = await openSampleAccount();
const { endpoint, key, preferredLocations } = account;
const counters = new HedgingCounters();
const options = withHedging(
  { endpoint, key, connectionPolicy: { preferredLocations } },
  { crossRegion: { threshold: 100 }, onDiagnostics: (diagnostics) => counters.record(diagnostics) },
);
const client = new CosmosClient(options);

try {
  const container = sampleContainer(client);
  await container.item("item-0", "pk-0").read();

  const slowRegion = preferredLocations[0]!;
  // Stragglers: a quarter of the point reads in the preferred region answer 1 s late.
  slowDownRegion(account, { region: slowRegion, delayMs: 1000, operations: ["pointRead"], share: 0.25 }, options);
  console.log(`\nA quarter of the point reads in ${slowRegion} now answer 1000 ms late.`);

  console.log("\n1. One response's diagnostics, from response.headers:");
  let hedged: HedgeDiagnostics | undefined;
  for (let i = 0; hedged === undefined && i < 40; i++) {
    const item = sampleItems[i % sampleItems.length]!;
    const response = await container.item(item.id, item.pk).read();
    const diagnostics = getHedgeDiagnostics(response.headers);
    if (diagnostics?.hedgeWon) hedged = diagnostics;
  }
  if (hedged !== undefined) {
    const { operation, primaryRegion, thresholdMs, hedgeFired, hedgeWon, winningRegion, terminalState, totalRequestCharge } = hedged;
    console.log({ operation, primaryRegion, thresholdMs, hedgeFired, hedgeWon, winningRegion, terminalState, totalRequestCharge });
    console.table(
      hedged.arms.map(({ region, reason, startOffsetMs, durationMs, status, requestCharge, outcome }) => ({
        region,
        reason,
        startOffsetMs: Math.round(startOffsetMs),
        // An aborted arm has no response, so no status or charge; nor has a drained one in this snapshot, taken when the race was decided.
        durationMs: durationMs === undefined ? "" : Math.round(durationMs),
        status: status ?? "",
        requestCharge: requestCharge ?? "",
        outcome,
      })),
    );
  }

  console.log("2. Not-found and failed requests carry diagnostics too:");
  const missing = await container.item("no-such-item", "pk-0").read();
  const notFound = getHedgeDiagnostics(missing.headers);
  // A 404 is a final answer: the first region to give it wins, no other region is asked.
  console.log(`   read of a missing item: status ${missing.statusCode}, ${notFound?.terminalState} in ${notFound?.winningRegion}`);
  try {
    await container.items.create(sampleItems[0]!);
  } catch (error) {
    const failed = getHedgeDiagnostics(error);
    const status = error instanceof ErrorResponse ? error.code : undefined;
    // Writes are not hedged on a single-write account; the record says why.
    console.log(`   create of an existing item: status ${status}, ${failed?.terminalState} (${failed?.skipReason}) in ${failed?.winningRegion}`);
  }

  console.log("\n3. Counts the onDiagnostics callback aggregated over every request so far, and 40 more reads:");
  for (let i = 0; i < 40; i++) {
    const item = sampleItems[i % sampleItems.length]!;
    await container.item(item.id, item.pk).read();
  }
  console.log(`   requests considered: ${counters.requests}, hedges sent: ${counters.hedgesSent}, request charge incl. losing arms: ${counters.requestCharge} RU`);
  console.log(`   by outcome: ${show(counters.byOutcome)}`);
  console.log(`   by serving region: ${show(counters.byServingRegion)}`);
} finally {
  client.dispose();
  await account.close();
}

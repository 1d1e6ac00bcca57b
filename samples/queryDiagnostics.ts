/**
 * Diagnostics of a query: `query(...).fetchAll()` keeps no per-request
 * headers, so `getHedgeDiagnostics(response.headers)` finds nothing there.
 * `collectHedgeDiagnostics(fn)` collects the record of every request made
 * inside `fn` instead: the query plan and each page, hedged or not.
 *
 * Run: npm run sample -- queryDiagnostics
 */
import { CosmosClient } from "@azure/cosmos";
import { collectHedgeDiagnostics, getCollectedHedgeDiagnostics, withHedging } from "cosmos-hedging";
import { openSampleAccount, sampleContainer, slowDownRegion } from "./support/account.js";

const account = await openSampleAccount();
const { endpoint, key, preferredLocations } = account;
const options = withHedging({ endpoint, key, connectionPolicy: { preferredLocations } }, { crossRegion: { threshold: 100 } });
const client = new CosmosClient(options);

try {
  const container = sampleContainer(client);
  await container.read();
  const slowRegion = preferredLocations[0]!;
  slowDownRegion(account, { region: slowRegion, delayMs: 1500, operations: ["query"] }, options);
  console.log(`${slowRegion}, the preferred region, answers query pages 1500 ms late.`);
  console.log("Every page goes first where the SDK sends it, and is hedged: a continuation is valid in every region.\n");

  const { result, diagnostics } = await collectHedgeDiagnostics(() =>
    container.items.query("SELECT * FROM c", { maxItemCount: 3 }).fetchAll(),
  );
  console.log(`fetchAll: ${result.resources.length} items; ${diagnostics.length} requests:`);
  for (const record of diagnostics) {
    const outcome = record.terminalState === "skipped" ? `not hedged (${record.skipReason})` : record.terminalState;
    console.log(`  ${record.operation.padEnd(9)} ${outcome.padEnd(29)} served by ${record.winningRegion}, ${record.totalRequestCharge} RU`);
  }
  const hedged = diagnostics.filter((record) => record.hedgeWon).length;
  const charge = diagnostics.reduce((sum, record) => sum + record.totalRequestCharge, 0);
  console.log(`hedges won: ${hedged} of ${diagnostics.length} requests; request charge of every arm: ${charge.toFixed(2)} RU`);

  // When the block fails, its error is rethrown unchanged and still carries what was collected.
  try {
    await collectHedgeDiagnostics(() => container.items.query("SELECT * FROM c WHERE").fetchAll());
  } catch (error) {
    const collected = getCollectedHedgeDiagnostics(error) ?? [];
    console.log(`\na malformed query failed with ${(error as { code?: unknown }).code}; requests before the failure: ${collected.map((record) => record.operation).join(", ") || "none"}`);
  }
} finally {
  client.dispose();
  await account.close();
}

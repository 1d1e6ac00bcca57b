/**
 * Hedging on any `@azure/core-client` `ServiceClient`: add
 * `crossRegionHedgingPolicy` to the client's pipeline with
 * `client.pipeline.addPolicy(...)` and give it the account's regions through a
 * `RegionCache` with an explicit topology, since such a client never reads the
 * database account for the policy to learn them from.
 *
 * Run: npm run sample -- coreClient
 */
import { performance } from "node:perf_hooks";
import { ServiceClient } from "@azure/core-client";
import { createHttpHeaders, createPipelineRequest } from "@azure/core-rest-pipeline";
import type { PipelinePolicy } from "@azure/core-rest-pipeline";
import { RegionCache, crossRegionHedgingPolicy, getHedgeDiagnostics, masterKeySigner } from "cosmos-hedging";
import { containerId, databaseId, openSampleAccount, since, slowDownRegion } from "./support/account.js";

/**
 * Cosmos DB master-key authorization, as a Sign-phase policy. It runs after
 * the hedging policy, so every arm of a race is signed for itself.
 */
function masterKeyAuthPolicy(key: string): PipelinePolicy {
  const sign = masterKeySigner(key);
  return {
    name: "masterKeyAuthPolicy",
    async sendRequest(request, next) {
      await sign(request);
      return next(request);
    },
  };
}

const account = await openSampleAccount();
try {
  const { key, preferredLocations, readRegions } = account;
  const preferred = readRegions.find((region) => region.name === preferredLocations[0])!;

  // The topology, explicitly: every read region with its regional endpoint, and the order to hedge in.
  const regions = new RegionCache({ topology: { readRegions }, preferredRegions: preferredLocations });
  console.log(`Regions in hedge order: ${regions.applicableRegions("read").map((region) => region.name).join(" → ")}`);

  const client = new ServiceClient({ baseUri: preferred.endpoint });
  // After the Retry phase: each arm goes out once (the retry policy retries the whole race), and the Sign phase signs every arm.
  client.pipeline.addPolicy(crossRegionHedgingPolicy({ regions, threshold: 100 }), { afterPhase: "Retry" });
  client.pipeline.addPolicy(masterKeyAuthPolicy(key), { phase: "Sign" });

  const pointRead = (id: string, partitionKey: string) =>
    client.sendRequest(
      createPipelineRequest({
        url: new URL(`dbs/${databaseId}/colls/${containerId}/docs/${id}`, preferred.endpoint).href,
        method: "GET",
        headers: createHttpHeaders({ "x-ms-version": "2020-07-15", "x-ms-documentdb-partitionkey": JSON.stringify([partitionKey]) }),
        // Plain HTTP only to an emulator on loopback; a real account is HTTPS.
        allowInsecureConnection: ["127.0.0.1", "localhost"].includes(new URL(preferred.endpoint).hostname),
      }),
    );

  const delayMs = 2000;
  slowDownRegion(account, { region: preferred.name, delayMs, operations: ["pointRead"] }, { pipeline: client.pipeline, regions });
  console.log(`${preferred.name}, which the client addresses, now answers point reads ${delayMs} ms late.`);

  const start = performance.now();
  const response = await pointRead("item-4", "pk-1");
  const ms = since(start);
  const diagnostics = getHedgeDiagnostics(response);
  const item = JSON.parse(response.bodyAsText ?? "{}") as { id?: string; value?: number };
  console.log(
    `GET ${item.id}: ${response.status} in ${ms} ms (value ${item.value}); primary ${diagnostics?.primaryRegion}, ` +
      `served by ${diagnostics?.winningRegion}, terminalState=${diagnostics?.terminalState}`,
  );
} finally {
  await account.close();
}

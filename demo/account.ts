import { createDefaultHttpClient, createEmptyPipeline } from "@azure/core-rest-pipeline";
import type { HttpClient } from "@azure/core-rest-pipeline";
import { CosmosClient } from "@azure/cosmos";
import type { Container, CosmosClientOptions } from "@azure/cosmos";
import { RegionCache } from "../src/topology/regionCache.js";
import { faultInjectionPolicy } from "../src/testing.js";
import type { FaultInjectionPolicy } from "../src/testing.js";
import { startEmulator } from "../test/emulator/index.js";
import type { Emulator } from "../test/emulator/index.js";
import { seedContainer } from "../test/support/cosmos.js";

/** The degradations the demo applies to the preferred region, wherever the account is. */
export interface Degrader {
  /** 10 % of point reads in the preferred region take `delayMs` longer. Returns what undoes it. */
  stragglers(share: number, delayMs: number): () => void;
  /** Every read in the preferred region takes `delayMs` longer. Returns what undoes it. */
  brownOut(delayMs: number): () => void;
}

/** Where the demo runs: the emulator on loopback, or a real account. */
export interface DemoAccount {
  description: string;
  preferredLocations: string[];
  /** Options every mode's client starts from; `httpClient` is the transport to wrap (with fault injection on a real account). */
  baseOptions: CosmosClientOptions;
  degrader: Degrader;
  /** The container the workload reads, seeded with `itemCount` items. */
  container(client: CosmosClient): Container;
  itemCount: number;
  regionOfEndpoint(endpoint: string): string | undefined;
  /** The emulator behind the account, which the oracle asks where each read will be fastest; a real account has none. */
  emulator?: Emulator;
  close(): Promise<void>;
}

const itemCount = 200;
const databaseId = process.env["COSMOS_DATABASE"] ?? "cosmos-hedging-demo";
const containerId = process.env["COSMOS_CONTAINER"] ?? "items";

function items(): { id: string; pk: string; value: number }[] {
  return Array.from({ length: itemCount }, (_, i) => ({ id: `item-${i}`, pk: `pk-${i % 20}`, value: i }));
}

/** The multi-region emulator: the preferred region is degraded by the emulator's own fault rules. */
export async function emulatorAccount(): Promise<DemoAccount> {
  const emulator = await startEmulator({
    regions: [{ name: "East US" }, { name: "West US", latencyMs: 30 }, { name: "North Europe", latencyMs: 80 }],
    recordRequests: false,
    seed: 11,
  });
  const preferredLocations = ["East US", "West US", "North Europe"];
  const seeder = new CosmosClient({ endpoint: emulator.endpoint, key: emulator.key });
  await seedContainer(seeder, { database: databaseId, container: containerId, items: items() });
  seeder.dispose();
  const preferred = emulator.region("East US");
  return {
    description: "the multi-region emulator on loopback (East US preferred; West US 30 ms and North Europe 80 ms away)",
    preferredLocations,
    baseOptions: {
      endpoint: emulator.endpoint,
      key: emulator.key,
      connectionPolicy: { preferredLocations, enableBackgroundEndpointRefreshing: false },
    },
    degrader: {
      stragglers: (share, delayMs) => {
        const rule = preferred.addFault({ operations: ["pointRead"], delayMs, probability: share });
        return () => rule.remove();
      },
      brownOut: (delayMs) => {
        const rule = preferred.addFault({ operations: ["pointRead", "query", "queryPlan", "readFeed"], delayMs });
        return () => rule.remove();
      },
    },
    container: (client) => client.database(databaseId).container(containerId),
    itemCount,
    regionOfEndpoint: (endpoint) => emulator.regions.find((region) => new URL(region.endpoint).host === new URL(endpoint).host)?.name,
    emulator,
    close: () => emulator.close(),
  };
}

/**
 * A real account from `COSMOS_ENDPOINT` and `COSMOS_KEY`. Nothing can slow its
 * regions on purpose, so the demo degrades the preferred region on the client
 * side: every mode's transport runs a `faultInjectionPolicy` nearest the wire.
 */
export async function realAccount(endpoint: string, key: string): Promise<DemoAccount> {
  const regions = new RegionCache();
  const faults: FaultInjectionPolicy = faultInjectionPolicy({ regions, rules: [] });
  const pipeline = createEmptyPipeline();
  pipeline.addPolicy(faults);
  const inner = createDefaultHttpClient();
  const transport: HttpClient = { sendRequest: (request) => pipeline.sendRequest(inner, request) };
  const probe = new CosmosClient({ endpoint, key, httpClient: transport });
  await seedContainer(probe, { database: databaseId, container: containerId, items: items() });
  const accountRegions = (await probe.getDatabaseAccount()).resource?.readableLocations.map((location) => location.name) ?? [];
  probe.dispose();
  const preferredLocations = process.env["COSMOS_PREFERRED_REGIONS"]?.split(",").map((name) => name.trim()) ?? accountRegions;
  const preferred = preferredLocations[0];
  if (preferred === undefined || accountRegions.length < 2) {
    throw new Error("The demo needs an account with at least two read regions.");
  }
  return {
    description: `the account at ${new URL(endpoint).host} (${preferred} preferred, degraded on the client side)`,
    preferredLocations,
    baseOptions: { endpoint, key, httpClient: transport, connectionPolicy: { preferredLocations } },
    degrader: {
      stragglers: (share, delayMs) => {
        const rule = faults.addRule({ region: preferred, operations: ["pointRead"], delayMs, probability: share });
        return () => faults.removeRule(rule.id);
      },
      brownOut: (delayMs) => {
        const rule = faults.addRule({ region: preferred, operations: ["pointRead", "query", "queryPlan", "readFeed"], delayMs });
        return () => faults.removeRule(rule.id);
      },
    },
    container: (client) => client.database(databaseId).container(containerId),
    itemCount,
    regionOfEndpoint: (regionEndpoint) => regions.regionOf(regionEndpoint)?.name,
    close: async () => undefined,
  };
}

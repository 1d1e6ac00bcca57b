/**
 * Where a sample runs: the multi-region emulator on loopback by default, or a
 * real account when `COSMOS_ENDPOINT` and `COSMOS_KEY` are set. Samples import
 * this so that their own code shows only what they demonstrate.
 */
import { performance } from "node:perf_hooks";
import { CosmosClient } from "@azure/cosmos";
import type { Container, CosmosClientOptions } from "@azure/cosmos";
import type { Pipeline } from "@azure/core-rest-pipeline";
import type { HedgingHttpClient, OperationKind, RegionCache, RegionEndpoint } from "cosmos-hedging";
import { faultInjectionPolicy } from "cosmos-hedging/testing";
import type { FaultInjectionPolicy } from "cosmos-hedging/testing";
import { startEmulator } from "../../test/emulator/index.js";
import type { Emulator } from "../../test/emulator/index.js";

/** The account a sample talks to. */
export interface SampleAccount {
  /** The account endpoint to give a client. */
  endpoint: string;
  /** The master key. */
  key: string;
  /** The preferred-region order, the most preferred first. */
  preferredLocations: string[];
  /** Every read region with its regional endpoint, for clients that are given the topology explicitly. */
  readRegions: RegionEndpoint[];
  /** The emulator, or `undefined` on a real account. */
  emulator: Emulator | undefined;
  /** Closes the emulator; a real account is left as it is. */
  close(): Promise<void>;
}

/** The database and container the samples read; override with `COSMOS_DATABASE` and `COSMOS_CONTAINER` on a real account. */
export const databaseId = process.env["COSMOS_DATABASE"] ?? "cosmos-hedging-samples";
export const containerId = process.env["COSMOS_CONTAINER"] ?? "items";

/** The items every sample can read: `item-0` … `item-9`, partition key `pk-0` … `pk-2`. */
export const sampleItems = Array.from({ length: 10 }, (_, i) => ({ id: `item-${i}`, pk: `pk-${i % 3}`, value: i }));

async function seed(client: CosmosClient): Promise<void> {
  const { database } = await client.databases.createIfNotExists({ id: databaseId });
  const { container } = await database.containers.createIfNotExists({ id: containerId, partitionKey: { paths: ["/pk"] } });
  for (const item of sampleItems) await container.items.upsert(item);
}

async function emulatorAccount(): Promise<SampleAccount> {
  const emulator = await startEmulator();
  const seeder = new CosmosClient({ endpoint: emulator.endpoint, key: emulator.key });
  try {
    await seed(seeder);
  } catch (error) {
    await emulator.close();
    throw error;
  } finally {
    seeder.dispose();
  }
  console.log(`Running on the multi-region emulator on loopback (${emulator.regions.map((region) => region.name).join(", ")}).`);
  return {
    endpoint: emulator.endpoint,
    key: emulator.key,
    preferredLocations: ["West US", "East US", "North Europe"],
    readRegions: emulator.regions.map((region) => ({ name: region.name, endpoint: region.endpoint })),
    emulator,
    close: () => emulator.close(),
  };
}

async function realAccount(endpoint: string, key: string, minRegions: number): Promise<SampleAccount> {
  const probe = new CosmosClient({ endpoint, key });
  try {
    await seed(probe);
    const account = (await probe.getDatabaseAccount()).resource;
    const readRegions = (account?.readableLocations ?? []).map((location) => ({ name: location.name, endpoint: location.databaseAccountEndpoint }));
    const preferredLocations =
      process.env["COSMOS_PREFERRED_REGIONS"]?.split(",").map((name) => name.trim()).filter((name) => name !== "") ??
      readRegions.map((region) => region.name);
    if (readRegions.length < minRegions) {
      throw new Error(`This sample needs an account with at least ${minRegions} read regions; ${new URL(endpoint).host} has ${readRegions.length}.`);
    }
    console.log(`Running on the real account at ${new URL(endpoint).host} (preferred: ${preferredLocations.join(", ")}).`);
    return { endpoint, key, preferredLocations, readRegions, emulator: undefined, close: async () => undefined };
  } finally {
    probe.dispose();
  }
}

/**
 * The real account named by `COSMOS_ENDPOINT` and `COSMOS_KEY`, else a fresh
 * emulator with three regions; either way seeded with {@link sampleItems}.
 * @param minRegions - the read regions the sample needs; a real account with fewer is refused.
 */
export function openSampleAccount(minRegions = 2): Promise<SampleAccount> {
  const endpoint = process.env["COSMOS_ENDPOINT"];
  const key = process.env["COSMOS_KEY"];
  return endpoint !== undefined && endpoint !== "" && key !== undefined && key !== ""
    ? realAccount(endpoint, key, minRegions)
    : emulatorAccount();
}

/** The sample container of a client. */
export function sampleContainer(client: CosmosClient): Container {
  return client.database(databaseId).container(containerId);
}

/**
 * Where a sample's client sends requests, for slowing a region down on a real
 * account: a hedging client (or any pipeline with its region cache), or the
 * options `withHedging` returned, whose `httpClient` is a hedging client.
 */
export type SlowDownTarget = { pipeline: Pipeline; regions: RegionCache } | CosmosClientOptions;

function pipelineOf(target: SlowDownTarget): { pipeline: Pipeline; regions: RegionCache } {
  if ("pipeline" in target) return target;
  const { httpClient } = target;
  if (httpClient === undefined || !("pipeline" in httpClient && "regions" in httpClient)) {
    throw new TypeError("slowDownRegion needs a hedging client, or client options made by withHedging.");
  }
  return httpClient as HedgingHttpClient;
}

// A pipeline takes one policy of a name, so every slowdown of a client shares one fault-injection policy.
const faultPolicies = new WeakMap<Pipeline, FaultInjectionPolicy>();

/** How to slow a region down. */
export interface Slowdown {
  /** The region's name. */
  region: string;
  /** How late it answers. */
  delayMs: number;
  /** The operation kinds it is slow for. */
  operations: OperationKind[];
  /** The share of those requests that are slow, 0 to 1; default all of them. */
  share?: number;
}

/**
 * Makes a region slow. On the emulator the region itself answers late; a
 * real account cannot be slowed on purpose, so there a `faultInjectionPolicy`
 * delays the requests at the wire end of the client's own pipeline.
 * @returns what undoes it.
 */
export function slowDownRegion(account: SampleAccount, slowdown: Slowdown, target: SlowDownTarget): () => void {
  const { region, delayMs, operations, share } = slowdown;
  const probability = share !== undefined ? { probability: share } : {};
  if (account.emulator !== undefined) {
    const fault = account.emulator.region(region).addFault({ operations, delayMs, ...probability });
    return () => fault.remove();
  }
  const { pipeline, regions } = pipelineOf(target);
  const faults = faultPolicies.get(pipeline) ?? faultInjectionPolicy({ regions, rules: [] });
  if (!faultPolicies.has(pipeline)) {
    pipeline.addPolicy(faults, { afterPhase: "Sign" });
    faultPolicies.set(pipeline, faults);
  }
  const rule = faults.addRule({ region, operations, delayMs, ...probability });
  return () => faults.removeRule(rule.id);
}

/** Milliseconds since `start`, rounded, for printing. */
export function since(start: number): number {
  return Math.round(performance.now() - start);
}

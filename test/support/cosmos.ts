import https from "node:https";
import { CosmosClient } from "@azure/cosmos";
import type { Container, CosmosClientOptions, ItemDefinition } from "@azure/cosmos";
import type { Emulator } from "../emulator/index.js";

export interface TestClientOptions extends CosmosClientOptions {
  /** Shorthand for `connectionPolicy.preferredLocations`. */
  preferredLocations?: string[];
}

/**
 * A `CosmosClient` on the emulator. Background endpoint refreshing is off by
 * default so that a test that forgets `dispose()` does not hang; callers must
 * still dispose the client.
 */
export function createTestClient(emulator: Emulator, options: TestClientOptions = {}): CosmosClient {
  const { preferredLocations, connectionPolicy, ...rest } = options;
  return new CosmosClient({
    endpoint: emulator.endpoint,
    key: emulator.key,
    ...rest,
    connectionPolicy: {
      enableBackgroundEndpointRefreshing: false,
      ...connectionPolicy,
      ...(preferredLocations !== undefined ? { preferredLocations } : {}),
    },
  });
}

export interface SeedOptions {
  database: string;
  container: string;
  /** Default `"/pk"`. */
  partitionKey?: string;
  items?: ItemDefinition[];
}

/** Creates the database and container if missing and upserts the items; returns the container. */
export async function seedContainer(client: CosmosClient, options: SeedOptions): Promise<Container> {
  const { database } = await client.databases.createIfNotExists({ id: options.database });
  const { container } = await database.containers.createIfNotExists({
    id: options.container,
    partitionKey: { paths: [options.partitionKey ?? "/pk"] },
  });
  for (const item of options.items ?? []) await container.items.upsert(item);
  return container;
}

/** Seeds the emulator through its HTTPS (WAN) fronts with a client of its master key, then closes that client and its agent. */
export async function seedOverWan(emulator: Emulator, wan: { readonly endpoint: string; readonly ca: string }, options: SeedOptions): Promise<void> {
  const agent = new https.Agent({ keepAlive: true, ca: wan.ca });
  const seeder = new CosmosClient({ endpoint: wan.endpoint, key: emulator.key, agent, connectionPolicy: { enableBackgroundEndpointRefreshing: false } });
  try {
    await seedContainer(seeder, options);
  } finally {
    seeder.dispose();
    agent.destroy();
  }
}

import type { ConnectionPolicy, Container, CosmosClient, ItemDefinition } from "@azure/cosmos";
import type { HttpClient } from "@azure/core-rest-pipeline";
import type { HedgingHttpClient, HedgingOptions } from "../../src/client/hedgingHttpClient.js";
import { withHedging } from "../../src/client/withHedging.js";
import type { HedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import { startEmulator, startWan } from "../emulator/index.js";
import type { Emulator, EmulatorOptions, Wan, WanOptions } from "../emulator/index.js";
import { createTestClient, seedContainer, seedOverWan } from "./cosmos.js";

/** What {@link useEmulator} starts and seeds once for its `describe`. */
export interface EmulatorFixtureOptions {
  readonly emulator?: EmulatorOptions;
  /** Default `"db"`. */
  readonly database?: string;
  /** Default `"items"`. */
  readonly container?: string;
  readonly items?: readonly ItemDefinition[];
  /** The preferred regions of every client the fixture makes, unless a client says otherwise. */
  readonly preferredLocations?: readonly string[];
}

/** How {@link EmulatorFixture.client} builds one `CosmosClient`. */
export interface FixtureClientOptions {
  /** Default: the fixture's. */
  readonly preferredLocations?: readonly string[];
  /** Hedging through `withHedging`; `false` for a plain client. Default `{}` (the hedging client's defaults). */
  readonly hedging?: HedgingOptions | false;
  /** The transport under the hedging client, or the whole `httpClient` of a plain one. */
  readonly httpClient?: HttpClient;
  readonly connectionPolicy?: Omit<ConnectionPolicy, "preferredLocations">;
  /** The account key the client signs with. Default: the emulator's. */
  readonly key?: string;
  /** Reads this item first, so that the account, container and partition key range caches are warm; then the counters and diagnostics start from zero. */
  readonly warmUp?: { readonly id: string; readonly pk: string };
}

/** A client the fixture made, and what it observed. */
export interface FixtureClient {
  readonly client: CosmosClient;
  readonly container: Container;
  /** The hedging `HttpClient`, when the client hedges. */
  readonly hedging: HedgingHttpClient | undefined;
  /** Every diagnostics record the hedging client reported, in order. */
  readonly diagnostics: HedgeDiagnostics[];
}

/** The emulator of a `describe` and the clients of its tests. */
export interface EmulatorFixture {
  readonly emulator: Emulator;
  readonly database: string;
  readonly containerId: string;
  /**
   * A `CosmosClient` on the emulator. Made inside a test, it is disposed
   * after the test; made in a `before` hook, when the emulator closes.
   */
  client(options?: FixtureClientOptions): Promise<FixtureClient>;
  /** Disposes a client the test made itself (options the fixture does not build) as it disposes its own. @returns the client. */
  adopt(client: CosmosClient): CosmosClient;
}

/**
 * Starts a multi-region emulator before the enclosing `describe`, seeds one
 * container, and closes it after; before each test the faults are cleared
 * and the counters reset, and after it the test's clients are disposed. The
 * preamble every integration and reliability file needs, in one place.
 */
export function useEmulator(options: EmulatorFixtureOptions = {}): EmulatorFixture {
  const database = options.database ?? "db";
  const containerId = options.container ?? "items";
  let emulator: Emulator | undefined;
  let inTest = false;
  const testClients: CosmosClient[] = [];
  const describeClients: CosmosClient[] = [];

  before(async function () {
    emulator = await startEmulator(options.emulator);
    const seeder = createTestClient(emulator);
    try {
      await seedContainer(seeder, { database, container: containerId, items: [...(options.items ?? [])] });
    } finally {
      seeder.dispose();
    }
  });

  after(async function () {
    for (const client of describeClients.splice(0)) client.dispose();
    await emulator?.close();
  });

  beforeEach(function () {
    inTest = true;
    emulator?.clearFaults();
    emulator?.resetCounters();
  });

  afterEach(function () {
    inTest = false;
    for (const client of testClients.splice(0)) client.dispose();
    emulator?.clearFaults();
  });

  const running = (): Emulator => {
    if (emulator === undefined) throw new Error("useEmulator: the emulator exists only inside the describe's hooks and tests.");
    return emulator;
  };

  return {
    get emulator() {
      return running();
    },
    database,
    containerId,
    adopt(client: CosmosClient): CosmosClient {
      (inTest ? testClients : describeClients).push(client);
      return client;
    },
    async client(clientOptions: FixtureClientOptions = {}): Promise<FixtureClient> {
      const target = running();
      const preferredLocations = clientOptions.preferredLocations ?? options.preferredLocations;
      const diagnostics: HedgeDiagnostics[] = [];
      const base = {
        endpoint: target.endpoint,
        key: clientOptions.key ?? target.key,
        connectionPolicy: {
          enableBackgroundEndpointRefreshing: false,
          ...clientOptions.connectionPolicy,
          ...(preferredLocations !== undefined ? { preferredLocations: [...preferredLocations] } : {}),
        },
        ...(clientOptions.httpClient !== undefined ? { httpClient: clientOptions.httpClient } : {}),
      };
      const hedgingOptions = clientOptions.hedging ?? {};
      const cosmosOptions =
        hedgingOptions === false
          ? base
          : withHedging(base, {
              ...hedgingOptions,
              onDiagnostics: (record) => {
                diagnostics.push(record);
                hedgingOptions.onDiagnostics?.(record);
              },
            });
      const client = createTestClient(target, cosmosOptions);
      (inTest ? testClients : describeClients).push(client);
      const container = client.database(database).container(containerId);
      if (clientOptions.warmUp !== undefined) {
        await container.item(clientOptions.warmUp.id, clientOptions.warmUp.pk).read();
        target.resetCounters();
        diagnostics.length = 0;
      }
      return {
        client,
        container,
        hedging: hedgingOptions === false ? undefined : (cosmosOptions.httpClient as HedgingHttpClient),
        diagnostics,
      };
    },
  };
}

/** The emulator behind its HTTPS (WAN) fronts that {@link useWanEmulator} starts for its `describe`. */
export interface WanFixture {
  readonly emulator: Emulator;
  readonly wan: Wan;
}

/**
 * Starts the emulator and its HTTPS fronts once for the enclosing
 * `describe`, seeds `db`/`items` with `items` through them, clears the
 * faults and resets the counters before each test, and closes both after.
 */
export function useWanEmulator(options: { readonly emulator?: EmulatorOptions; readonly wan?: WanOptions; readonly items: readonly ItemDefinition[] }): WanFixture {
  let emulator: Emulator | undefined;
  let wan: Wan | undefined;
  before(async function () {
    emulator = await startEmulator(options.emulator);
    wan = await startWan(emulator, options.wan ?? {});
    await seedOverWan(emulator, wan, { database: "db", container: "items", items: [...options.items] });
  });
  after(async function () {
    await wan?.close();
    await emulator?.close();
  });
  beforeEach(function () {
    emulator?.clearFaults();
    emulator?.resetCounters();
    wan?.resetCounters();
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error("useWanEmulator: the emulator exists only inside the describe's hooks and tests.");
    return value;
  };
  return {
    get emulator() {
      return started(emulator);
    },
    get wan() {
      return started(wan);
    },
  };
}

import assert from "node:assert/strict";
import { createDefaultHttpClient } from "@azure/core-rest-pipeline";
import { CosmosClient } from "@azure/cosmos";
import type { Container, CosmosClientOptions, PluginConfig } from "@azure/cosmos";
import { withHedging } from "../../src/client/withHedging.js";
import { getHedgingDetection } from "../../src/diagnostics/detection.js";
import type { Emulator } from "../emulator/index.js";
import { useEmulator } from "../support/emulatorFixture.js";

const preferredLocations = ["West US", "East US", "North Europe"];
/** Far beyond the threshold: only a hedge answers before it. */
const slowMs = 2000;
const threshold = 200;

/** The SDK's options with its `plugins`, which its public type leaves out. */
type PluggedOptions = CosmosClientOptions & { plugins?: PluginConfig[] };

/**
 * Plugins of the user's around the ones `withHedging` installs, through the
 * real CosmosClient beside a plain one with the same plugins (from the
 * hostile review of the hand-over of the SDK's options): the SDK's
 * exclusions still bind every request, nothing of ours reaches the service,
 * and the detection record still sees the hedges.
 */
describe("user plugins around withHedging's, beside plain @azure/cosmos", function () {
  const fixture = useEmulator({ items: [{ id: "1", pk: "a", value: 1 }] });
  let emulator: Emulator;

  beforeEach(function () {
    emulator = fixture.emulator;
  });

  function base(plugins: readonly PluginConfig[] = []): PluggedOptions {
    return {
      endpoint: emulator.endpoint,
      key: emulator.key,
      connectionPolicy: { enableBackgroundEndpointRefreshing: false, preferredLocations: [...preferredLocations] },
      ...(plugins.length > 0 ? { plugins: [...plugins] } : {}),
    };
  }

  /** Warms the client's account and container caches, then counts from zero. */
  async function containerOf(options: PluggedOptions): Promise<Container> {
    const client = fixture.adopt(new CosmosClient(options));
    const container = client.database("db").container("items");
    // The container, not an item: the first document read is then the test's own (a first hand-over not taken changes what later ones do).
    await container.read();
    emulator.resetCounters();
    return container;
  }

  /** A plain client and a hedged one, each with `before` passed in and `after` appended to the plugins withHedging returns. */
  async function pair(after: readonly PluginConfig[], before: readonly PluginConfig[] = []): Promise<{ plain: Container; hedged: Container }> {
    const plain = await containerOf(base([...before, ...after]));
    const hedging = withHedging(base(before), { crossRegion: { threshold, thresholdStep: 5000, budget: false } });
    const hedged = await containerOf({ ...hedging, plugins: [...(hedging.plugins ?? []), ...after] });
    return { plain, hedged };
  }

  function reads(): Record<string, number> {
    return Object.fromEntries(emulator.regions.map((region) => [region.name, region.count(["pointRead"])]));
  }

  function leakedHeaders(): string[] {
    return emulator.regions.flatMap((region) => region.requests.flatMap((request) => Object.keys(request.headers).filter((name) => name.startsWith("x-cosmos-hedging"))));
  }

  /** A caller's header named like the request plugin's, saying "the SDK excludes nothing". */
  const forged = { excludedLocations: ["East US"], initialHeaders: { "X-Cosmos-Hedging-Sdk-Excluded-Regions": "[]" } };

  for (const [what, fastErrors, plugin] of [
    // Re-sends after an error: the second send comes after an await, outside any hand-over.
    ["re-sends once after an error", 1, { on: "request", plugin: async (context, _node, next) => { try { return await next(context); } catch { return next(context); } } }],
    // Awaits before sending a document request: the hand-over of the account reads still works, so nothing falls back to headers.
    ["awaits before each document request", 0, { on: "request", plugin: async (context, _node, next) => { if (context.resourceType === "docs") await new Promise((resolve) => setImmediate(resolve)); return next(context); } }],
  ] as const satisfies readonly (readonly [string, number, PluginConfig])[]) {
    it(`a request plugin after withHedging's that ${what}, with a caller's forged plugin header: the SDK's exclusions still bind, as plain's`, async function () {
      const { plain, hedged } = await pair([plugin]);
      const outcome = async (container: Container): Promise<unknown> => {
        emulator.clearFaults();
        emulator.resetCounters();
        // A fast error the plugin may answer by sending again, then a West US too slow to wait for.
        if (fastErrors > 0) emulator.region("West US").addFault({ operations: ["pointRead"], status: 400, count: fastErrors });
        emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: slowMs });
        try {
          const { statusCode, resource } = await container.item("1", "a").read(forged);
          return { statusCode, value: resource?.value, reads: reads() };
        } catch (error) {
          return { code: (error as { code?: unknown }).code, reads: reads() };
        }
      };
      const plainOutcome = await outcome(plain);
      const hedgedOutcome = await outcome(hedged);
      assert.deepEqual(hedgedOutcome, plainOutcome);
      assert.equal((hedgedOutcome as { reads: Record<string, number> }).reads["East US"], 0, "nothing went to the excluded region");
      assert.deepEqual(leakedHeaders(), []);
    });
  }

  it("an operation plugin before withHedging's that passes a copy with copied headers: the detection record still sees the hedge", async function () {
    const copying: PluginConfig = { on: "operation", plugin: (context, _node, next) => next({ ...context, headers: { ...context.headers } }) };
    const { hedged } = await pair([], [copying]);
    emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: slowMs });
    const response = await hedged.item("1", "a").read();
    assert.equal(response.resource?.value, 1);
    assert.equal(reads()["East US"], 1, "the hedge went out");
    const detection = getHedgingDetection(response);
    assert.equal(detection?.hedgingStarted(), true);
    assert.deepEqual(detection?.requestedRegions().map(({ region, reason }) => [region, reason]), [
      ["West US", "initial"],
      ["East US", "hedging"],
    ]);
  });

  it("httpClient replaced after withHedging, its plugins kept: nothing of this package reaches the service, and the read ends as plain's", async function () {
    const hedging = withHedging(base());
    const replaced = await containerOf({ ...hedging, httpClient: createDefaultHttpClient() });
    const plain = await containerOf(base());
    const { resource } = await replaced.item("1", "a").read({ excludedLocations: ["East US"] });
    assert.deepEqual(resource, (await plain.item("1", "a").read({ excludedLocations: ["East US"] })).resource);
    assert.deepEqual(leakedHeaders(), []);
  });
});

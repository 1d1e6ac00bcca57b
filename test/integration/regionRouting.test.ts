import assert from "node:assert/strict";
import { performance } from "node:perf_hooks";
import type { Container } from "@azure/cosmos";
import { createDefaultHttpClient, createEmptyPipeline } from "@azure/core-rest-pipeline";
import type { HttpClient } from "@azure/core-rest-pipeline";
import { RegionCache } from "../../src/topology/regionCache.js";
import { hedgingRequestOptions, withRequestHedgingOptions } from "../../src/client/requestOptions.js";
import type { OperationKind } from "../../src/cosmos/operationKind.js";
import { getHedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import type { HedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import { crossRegionHedgingPolicy } from "../../src/policies/crossRegionHedgingPolicy.js";
import { excludedRegionsPolicy } from "../../src/policies/excludedRegionsPolicy.js";
import type { Emulator } from "../emulator/index.js";
import { useEmulator } from "../support/emulatorFixture.js";

const items = Array.from({ length: 4 }, (_, i) => ({ id: `item-${i}`, pk: `pk-${i % 2}`, value: i }));
const preferred = ["West US", "East US", "North Europe"];
const regionNames = ["East US", "West US", "North Europe"];
/**
 * Far above what a healthy read takes, even on a loaded machine: a read
 * hedges only when a fault delays it, never because the machine was slow.
 */
const threshold = 500;
/** A region delayed this long loses every race it is in; the loser is cut, so no test waits for it. */
const slow = 10_000;
/** Long enough to show that a request waited past the threshold without a hedge, short enough to keep the file fast. */
const pastThreshold = threshold + 300;
const queryKinds: OperationKind[] = ["query", "queryPlan"];

describe("region routing through the real CosmosClient", function () {
  const fixture = useEmulator({ items, preferredLocations: preferred });
  let emulator: Emulator;
  let regions: RegionCache;
  let container: Container;
  let diagnostics: HedgeDiagnostics[];

  beforeEach(async function () {
    emulator = fixture.emulator;
    diagnostics = [];
    // The hedging client's pipeline: routing first, then hedging, sharing one RegionCache.
    regions = new RegionCache({ preferredRegions: preferred });
    const pipeline = createEmptyPipeline();
    pipeline.addPolicy(excludedRegionsPolicy({ regions }));
    pipeline.addPolicy(crossRegionHedgingPolicy({ regions, threshold, thresholdStep: threshold, onDiagnostics: (record) => diagnostics.push(record) }));
    const transport = createDefaultHttpClient();
    const httpClient: HttpClient = { sendRequest: (request) => pipeline.sendRequest(transport, request) };
    // Warm the SDK's caches (and the RegionCache's topology) so that each test sees only its own operation.
    ({ container } = await fixture.client({ hedging: false, httpClient, warmUp: { id: "item-0", pk: "pk-0" } }));
    diagnostics.length = 0;
  });

  function counts(kind: OperationKind | OperationKind[]): Record<string, number> {
    return Object.fromEntries(regionNames.map((name) => [name, emulator.region(name).count(kind)]));
  }

  function delay(region: string, operations: OperationKind[] = ["pointRead"], delayMs = slow): void {
    emulator.region(region).addFault({ operations, delayMs });
  }

  async function timed<T>(operation: () => Promise<T>): Promise<{ result: T; ms: number }> {
    const start = performance.now();
    const result = await operation();
    return { result, ms: performance.now() - start };
  }

  describe("a per-request exclusion", function () {
    it("keeps the hedges of a point read away from the excluded region", async function () {
      delay("West US");
      delay("East US");
      const { resource, headers } = await container.item("item-1", "pk-1").read(hedgingRequestOptions({ excludedRegions: ["East US"] }));
      assert.equal(resource?.value, 1);
      assert.deepEqual(counts("pointRead"), { "West US": 1, "East US": 0, "North Europe": 1 });
      assert.equal(getHedgeDiagnostics(headers)?.winningRegion, "North Europe");
    });

    it("moves the primary off an excluded region and hedges elsewhere", async function () {
      delay("East US");
      const { resource, headers } = await container.item("item-1", "pk-1").read(hedgingRequestOptions({ excludedRegions: ["West US"] }));
      assert.equal(resource?.value, 1);
      assert.deepEqual(counts("pointRead"), { "West US": 0, "East US": 1, "North Europe": 1 });
      const record = getHedgeDiagnostics(headers);
      assert.equal(record?.primaryRegion, "East US");
      assert.equal(record?.winningRegion, "North Europe");
    });

    it("keeps every request of a query, its query plan included, away from the excluded region", async function () {
      delay("East US", queryKinds);
      const { resources } = await container.items
        .query("SELECT * FROM c", hedgingRequestOptions({ excludedRegions: ["West US"] }))
        .fetchAll();
      assert.equal(resources.length, items.length);
      assert.equal(emulator.region("West US").count(queryKinds), 0);
      assert.ok(emulator.region("North Europe").count(queryKinds) >= 2, "the hedges went to North Europe");
      assert.ok(diagnostics.some((record) => record.operation === "queryPlan"));
    });

    it("sends the request where plain @azure/cosmos with the same excludedLocations sends it when it excludes every region", async function () {
      const plain = await fixture.client({ hedging: false, warmUp: { id: "item-0", pk: "pk-0" } });
      emulator.resetCounters();
      await plain.container.item("item-1", "pk-1").read({ excludedLocations: regionNames });
      const plainCounts = counts("pointRead");
      assert.equal(Object.values(plainCounts).reduce((sum, count) => sum + count, 0), 1);
      emulator.resetCounters();
      const { resource } = await container.item("item-1", "pk-1").read(hedgingRequestOptions({ excludedRegions: regionNames }));
      assert.equal(resource?.value, 1);
      assert.deepEqual(counts("pointRead"), plainCounts);
    });
  });

  describe("a client-level exclusion set at runtime", function () {
    it("stops traffic to the region from the next request on, hedges included, and lifting it restores traffic", async function () {
      await container.item("item-1", "pk-1").read();
      assert.equal(emulator.region("West US").count("pointRead"), 1);

      regions.setExcludedRegions(["West US"]);
      emulator.resetCounters();
      delay("East US");
      await container.item("item-1", "pk-1").read();
      await container.items.query("SELECT * FROM c WHERE c.pk = 'pk-0'", { partitionKey: "pk-0" }).fetchAll();
      assert.equal(emulator.region("West US").count(["pointRead", ...queryKinds]), 0);
      assert.deepEqual(counts("pointRead"), { "West US": 0, "East US": 1, "North Europe": 1 });

      regions.setExcludedRegions([]);
      emulator.resetCounters();
      emulator.clearFaults();
      await container.item("item-1", "pk-1").read();
      assert.deepEqual(counts("pointRead"), { "West US": 1, "East US": 0, "North Europe": 0 });
    });
  });

  describe("a preferred order changed at runtime", function () {
    it("moves the primary of reads and the hedge order, and restoring it moves them back", async function () {
      regions.setPreferredRegions(["North Europe", "East US", "West US"]);
      delay("North Europe");
      const { headers } = await container.item("item-1", "pk-1").read();
      assert.deepEqual(counts("pointRead"), { "West US": 0, "East US": 1, "North Europe": 1 });
      const record = getHedgeDiagnostics(headers);
      assert.equal(record?.primaryRegion, "North Europe");
      assert.deepEqual(record?.arms.map((arm) => arm.region), ["North Europe", "East US"]);

      regions.setPreferredRegions(preferred);
      emulator.resetCounters();
      emulator.clearFaults();
      await container.item("item-1", "pk-1").read();
      assert.deepEqual(counts("pointRead"), { "West US": 1, "East US": 0, "North Europe": 0 });
    });
  });

  describe("a request pinned to a region", function () {
    it("goes to that region and is not hedged, however slow it is", async function () {
      delay("North Europe", ["pointRead"], pastThreshold);
      const { result, ms } = await timed(() => container.item("item-1", "pk-1").read(hedgingRequestOptions({ region: "North Europe" })));
      assert.equal(result.resource?.value, 1);
      assert.ok(ms >= pastThreshold - 5, `the pinned read waited for its region (${ms.toFixed(0)} ms)`);
      assert.deepEqual(counts("pointRead"), { "West US": 0, "East US": 0, "North Europe": 1 });
      assert.equal(getHedgeDiagnostics(result.headers)?.skipReason, "pinnedRegion");
    });

    it("fails a write pinned to a region that does not take writes, before anything is sent", async function () {
      await assert.rejects(
        container.items.create({ id: "pinned-write", pk: "pk-9" }, hedgingRequestOptions({ region: "West US" })),
        /Cannot send this write to region "West US": it is not a write region of the account; its write regions are "East US"/,
      );
      assert.equal(emulator.count("create"), 0);
    });

    it("sends a write pinned to the write region there", async function () {
      const { statusCode } = await container.items.create({ id: "pinned-write-ok", pk: "pk-9" }, hedgingRequestOptions({ region: "East US" }));
      assert.equal(statusCode, 201);
      assert.equal(emulator.region("East US").count("create"), 1);
      await container.item("pinned-write-ok", "pk-9").delete();
    });
  });

  describe("hedging: false on one request", function () {
    it("turns hedging off for that request alone", async function () {
      const fault = emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: pastThreshold, count: 1 });
      const unhedged = await timed(() => container.item("item-1", "pk-1").read(hedgingRequestOptions({ hedging: false })));
      assert.ok(unhedged.ms >= pastThreshold - 5, `the unhedged read waited (${unhedged.ms.toFixed(0)} ms)`);
      assert.deepEqual(counts("pointRead"), { "West US": 1, "East US": 0, "North Europe": 0 });
      assert.equal(getHedgeDiagnostics(unhedged.result.headers)?.skipReason, "disabled");

      fault.remove();
      delay("West US");
      emulator.resetCounters();
      const hedged = await timed(() => container.item("item-1", "pk-1").read());
      assert.ok(hedged.ms < slow / 2, `the next read hedged (${hedged.ms.toFixed(0)} ms)`);
      assert.equal(getHedgeDiagnostics(hedged.result.headers)?.winningRegion, "East US");
    });
  });

  describe("control headers", function () {
    function controlHeadersSeen(): string[] {
      return emulator.regions.flatMap((region) =>
        region.requests.flatMap((request) => Object.keys(request.headers).filter((name) => name.startsWith("x-cosmos-hedging"))),
      );
    }

    it("never reach the service, for point reads, queries and creates, while your own initialHeaders do", async function () {
      const mine = { initialHeaders: { "x-test-marker": "routing" } };
      await container.item("item-1", "pk-1").read(hedgingRequestOptions({ excludedRegions: ["West US"], hedging: { threshold: 600 } }, mine));
      await container.items
        .query("SELECT * FROM c", hedgingRequestOptions({ excludedRegions: ["West US"], hedging: false }, mine))
        .fetchAll();
      await container.items.create({ id: "headers-create", pk: "pk-8" }, hedgingRequestOptions({ region: "East US", hedging: false }, mine));
      await container.item("item-2", "pk-0").read(hedgingRequestOptions({ region: "North Europe" }, mine));

      const kinds: OperationKind[] = ["pointRead", "query", "queryPlan", "create"];
      const marked = emulator.regions.flatMap((region) => region.requests.filter((request) => request.headers["x-test-marker"] === "routing"));
      assert.deepEqual([...new Set(marked.map((request) => request.kind))].sort(), [...kinds].sort());
      assert.equal(emulator.region("West US").count(kinds), 0, "the controls were applied");
      assert.deepEqual(controlHeadersSeen(), []);
      await container.item("headers-create", "pk-8").delete();
    });
  });

  describe("withRequestHedgingOptions", function () {
    it("applies its choices to every request of the block, and not after it", async function () {
      delay("East US");
      await withRequestHedgingOptions({ excludedRegions: ["West US"] }, async () => {
        await container.item("item-1", "pk-1").read();
        await container.items.query("SELECT * FROM c WHERE c.pk = 'pk-1'", { partitionKey: "pk-1" }).fetchAll();
      });
      assert.equal(emulator.region("West US").count(["pointRead", ...queryKinds]), 0);
      assert.deepEqual(counts("pointRead"), { "West US": 0, "East US": 1, "North Europe": 1 });

      emulator.resetCounters();
      emulator.clearFaults();
      await container.item("item-1", "pk-1").read();
      assert.deepEqual(counts("pointRead"), { "West US": 1, "East US": 0, "North Europe": 0 });
    });
  });
});

import assert from "node:assert/strict";
import { performance } from "node:perf_hooks";
import { ChangeFeedStartFrom } from "@azure/cosmos";
import type { Container } from "@azure/cosmos";
import { ServiceClient } from "@azure/core-client";
import { createHttpHeaders, createPipelineRequest } from "@azure/core-rest-pipeline";
import { hedgingRequestOptions } from "../../src/client/requestOptions.js";
import { RegionCache } from "../../src/topology/regionCache.js";
import { getHedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import type { HedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import { masterKeySigner } from "../../src/cosmos/masterKeySigner.js";
import { crossRegionHedgingPolicy } from "../../src/policies/crossRegionHedgingPolicy.js";
import type { Emulator } from "../emulator/index.js";
import { useEmulator } from "../support/emulatorFixture.js";
import { assertSeen, settledRequests } from "../support/wire.js";

const items = Array.from({ length: 6 }, (_, i) => ({ id: `item-${i}`, pk: `pk-${i % 3}`, value: i }));
/** A region delayed this long loses every race it is in; the loser is cut, so no test waits for it. */
const slow = 10_000;
const threshold = 100;

describe("crossRegionHedgingPolicy through the real CosmosClient", function () {
  const fixture = useEmulator({ items, preferredLocations: ["West US", "East US", "North Europe"] });
  let emulator: Emulator;
  let container: Container;
  let diagnostics: HedgeDiagnostics[];

  beforeEach(async function () {
    emulator = fixture.emulator;
    ({ container, diagnostics } = await fixture.client({
      // A second hedge only if the first takes seconds to answer: each race has the arms its test expects, however loaded the machine.
      hedging: { crossRegion: { threshold, thresholdStep: slow / 2 } },
      // Warm the SDK's account and container caches so that every test measures only its own operation.
      warmUp: { id: "item-0", pk: "pk-0" },
    }));
  });

  async function timed<T>(operation: () => Promise<T>): Promise<{ result: T; ms: number }> {
    const start = performance.now();
    const result = await operation();
    return { result, ms: performance.now() - start };
  }

  it("hedges a point read away from a slow preferred region and reports it in response.headers", async function () {
    emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: slow });
    const { result, ms } = await timed(() => container.item("item-1", "pk-1").read());
    assert.equal(result.statusCode, 200);
    assert.equal(result.resource?.value, 1);
    assert.ok(ms < slow / 2, `the hedged read took ${ms.toFixed(0)} ms`);
    const record = getHedgeDiagnostics(result.headers);
    assert.ok(record, "diagnostics are in response.headers");
    assert.equal(record.policy, "crossRegion");
    assert.equal(record.operation, "pointRead");
    assert.equal(record.primaryRegion, "West US");
    assert.equal(record.hedgeFired, true);
    assert.equal(record.hedgeWon, true);
    assert.equal(record.winningRegion, "East US");
    assert.equal(record.terminalState, "hedgeWon");
    assert.deepEqual(
      record.arms.map((arm) => [arm.region, arm.reason, arm.outcome]),
      [
        ["West US", "primary", "drained"],
        ["East US", "threshold", "returned"],
      ],
    );
    assert.ok(record.arms[1]!.startOffsetMs >= threshold - 5);
    // What the service saw: the primary cut before its answer, the hedge answered, North Europe never asked.
    assertSeen(await settledRequests(emulator, "pointRead"), [
      { region: "West US", status: undefined, cutByClient: true },
      { region: "East US", status: 200, cutByClient: false },
    ]);
  });

  it("hedges a single-partition query", async function () {
    emulator.region("West US").addFault({ operations: ["query", "queryPlan"], delayMs: slow });
    const { result, ms } = await timed(() =>
      container.items.query("SELECT * FROM c WHERE c.pk = 'pk-1'", { partitionKey: "pk-1" }).fetchAll(),
    );
    assert.deepEqual(result.resources.map((item) => item.id).sort(), ["item-1", "item-4"]);
    assert.ok(ms < slow / 2, `the hedged query took ${ms.toFixed(0)} ms`);
    const queries = diagnostics.filter((record) => record.operation === "query");
    assert.ok(queries.length >= 1);
    assert.ok(queries.every((record) => record.hedgeWon && record.winningRegion === "East US"));
  });

  it("hedges a cross-partition query, its query plan included", async function () {
    emulator.region("West US").addFault({ operations: ["query", "queryPlan"], delayMs: slow });
    const { result, ms } = await timed(() => container.items.query("SELECT * FROM c").fetchAll());
    assert.equal(result.resources.length, items.length);
    assert.ok(ms < slow / 2, `the hedged query took ${ms.toFixed(0)} ms`);
    const hedged = diagnostics.filter((record) => record.operation === "query" || record.operation === "queryPlan");
    assert.ok(hedged.some((record) => record.operation === "queryPlan"), "the query plan request was considered");
    assert.ok(hedged.every((record) => record.hedgeWon));
    assert.ok(emulator.region("East US").count(["query", "queryPlan"]) >= 2);
  });

  it("hedges a read feed (readAll, which @azure/cosmos sends as a query)", async function () {
    emulator.region("West US").addFault({ operations: ["readFeed", "query", "queryPlan"], delayMs: slow });
    const { result, ms } = await timed(() => container.items.readAll().fetchAll());
    assert.equal(result.resources.length, items.length);
    assert.ok(ms < slow / 2, `the hedged read feed took ${ms.toFixed(0)} ms`);
    assert.ok(diagnostics.length >= 1);
    assert.ok(diagnostics.every((record) => record.hedgeWon && record.winningRegion === "East US"));
  });

  it("hedges a change feed", async function () {
    emulator.region("West US").addFault({ operations: ["changeFeed"], delayMs: slow });
    const iterator = container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning() });
    const { result, ms } = await timed(() => iterator.readNext());
    assert.equal(result.result.length, items.length);
    assert.ok(ms < slow / 2, `the hedged change feed took ${ms.toFixed(0)} ms`);
    const feeds = diagnostics.filter((record) => record.operation === "changeFeed");
    assert.ok(feeds.length >= 1 && feeds.every((record) => record.hedgeWon && record.winningRegion === "East US"));
  });

  it("sends a create on a slow write region exactly once", async function () {
    emulator.region("East US").addFault({ operations: ["create"], delayMs: 600 });
    const { result, ms } = await timed(() => container.items.create({ id: "created-once", pk: "pk-9", value: 9 }));
    assert.equal(result.statusCode, 201);
    assert.ok(ms >= 600, "the create waited for the slow write region");
    assert.equal(emulator.count("create"), 1, "one create reached the service, in any region");
    assert.equal(emulator.region("East US").count("create"), 1);
    const record = getHedgeDiagnostics(result.headers);
    assert.equal(record?.terminalState, "skipped");
    assert.equal(record?.skipReason, "notEligible");
    await container.item("created-once", "pk-9").delete();
  });

  it("returns a fast 404 for a missing item without a hedge", async function () {
    // A 404 that took longer than the threshold would sprout a hedge; this one has ten seconds.
    const error = await container
      .item("missing", "pk-0")
      .read(hedgingRequestOptions({ hedging: { threshold: slow } }))
      .then(
        (response) => response,
        (thrown: unknown) => thrown,
      );
    const status = (error as { statusCode?: number; code?: number }).statusCode ?? (error as { code?: number }).code;
    assert.equal(status, 404);
    assert.equal(emulator.region("West US").count("pointRead"), 1);
    assert.equal(emulator.region("East US").count("pointRead"), 0);
    assert.equal(emulator.region("North Europe").count("pointRead"), 0);
    const record = diagnostics.find((entry) => entry.operation === "pointRead");
    assert.equal(record?.hedgeFired, false);
    assert.equal(record?.terminalState, "primaryWon");
  });

  it("leaves a 503 of the preferred region to the SDK's own failover, at once", async function () {
    emulator.region("West US").addFault({ operations: ["pointRead"], status: 503 });
    const { result, ms } = await timed(() => container.item("item-2", "pk-2").read(hedgingRequestOptions({ hedging: { threshold: slow } })));
    assert.equal(result.statusCode, 200);
    assert.ok(ms < slow / 2, `the 503 went back to the SDK at once (${ms.toFixed(0)} ms)`);
    // The record of the operation's last attempt: the SDK's retry in the next region, which it sends unhedged.
    const record = getHedgeDiagnostics(result.headers);
    assert.equal(record?.hedgeFired, false);
    assert.equal(record?.skipReason, "sdkRetry");
    assert.equal(record?.primaryRegion, "East US");
    assert.equal(emulator.region("East US").count("pointRead"), 1);
  });
});

describe("crossRegionHedgingPolicy on a core-client ServiceClient", function () {
  const fixture = useEmulator({ items });

  it("hedges through client.pipeline.addPolicy", async function () {
    const { emulator } = fixture;
    const regions = new RegionCache({
      topology: { readRegions: emulator.regions.map((region) => ({ name: region.name, endpoint: region.endpoint })) },
      preferredRegions: ["West US", "East US"],
    });
    const client = new ServiceClient({ baseUri: emulator.region("West US").endpoint });
    client.pipeline.addPolicy(crossRegionHedgingPolicy({ regions, threshold }), { afterPhase: "Retry" });
    // The Sign phase comes after the hedging policy, so it signs every arm: the emulator refuses an unsigned or wrongly signed one.
    const sign = masterKeySigner(emulator.key);
    client.pipeline.addPolicy({ name: "masterKeySign", sendRequest: async (request, next) => (await sign(request), next(request)) }, { phase: "Sign" });
    const order = client.pipeline.getOrderedPolicies().map((policy) => policy.name);
    assert.ok(order.indexOf("crossRegionHedgingPolicy") > order.indexOf("defaultRetryPolicy"));
    assert.ok(order.indexOf("crossRegionHedgingPolicy") > order.indexOf("redirectPolicy"));
    emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: slow });
    const start = performance.now();
    const response = await client.sendRequest(
      createPipelineRequest({
        url: new URL("dbs/db/colls/items/docs/item-3", emulator.region("West US").endpoint).href,
        method: "GET",
        allowInsecureConnection: true,
        headers: createHttpHeaders({ "x-ms-documentdb-partitionkey": '["pk-0"]', "x-ms-version": "2020-07-15" }),
      }),
    );
    const ms = performance.now() - start;
    assert.equal(response.status, 200);
    assert.equal(JSON.parse(response.bodyAsText ?? "{}").id, "item-3");
    assert.ok(ms < slow / 2, `the hedged read took ${ms.toFixed(0)} ms`);
    assert.equal(getHedgeDiagnostics(response)?.winningRegion, "East US");
    assertSeen(await settledRequests(emulator, "pointRead"), [
      { region: "West US", status: undefined, cutByClient: true },
      { region: "East US", status: 200, cutByClient: false },
    ]);
  });
});

import assert from "node:assert/strict";
import { ChangeFeedStartFrom, CosmosClient } from "@azure/cosmos";
import type { Container } from "@azure/cosmos";
import type { HedgingOptions } from "../../src/client/hedgingHttpClient.js";
import { withHedging } from "../../src/client/withHedging.js";
import { metadataHedgingEnvironmentVariable } from "../../src/cosmos/environment.js";
import { getHedgeDiagnostics } from "../../src/hedging/diagnostics.js";
import type { HedgeDiagnostics } from "../../src/hedging/diagnostics.js";
import { startEmulator } from "../emulator/index.js";
import type { Emulator } from "../emulator/index.js";
import { createTestClient, seedContainer } from "../support/cosmos.js";

const preferredLocations = ["West US", "East US"];
const threshold = 300;
const slowMetadataMs = 2500;

describe("metadataHedgingPolicy through the real CosmosClient", function () {
  let emulator: Emulator;
  const clients: CosmosClient[] = [];
  const savedSwitch = process.env[metadataHedgingEnvironmentVariable];

  /** A cold client (nothing cached yet) whose metadata reads are hedged, recording every diagnostics record. */
  function coldClient(hedging: HedgingOptions = { metadata: { threshold } }): { client: CosmosClient; seen: HedgeDiagnostics[] } {
    const seen: HedgeDiagnostics[] = [];
    const client = new CosmosClient(
      withHedging(
        {
          endpoint: emulator.endpoint,
          key: emulator.key,
          connectionPolicy: { enableBackgroundEndpointRefreshing: false, preferredLocations },
        },
        { ...hedging, onDiagnostics: (diagnostics) => seen.push(diagnostics) },
      ),
    );
    clients.push(client);
    return { client, seen };
  }

  /** Reads the whole container's change feed from the beginning; the SDK needs the partition key ranges for it. */
  async function readChangeFeed(container: Container): Promise<number> {
    const response = await container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning() }).readNext();
    return response.result.length;
  }

  async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
    const start = performance.now();
    const value = await work();
    return { value, ms: performance.now() - start };
  }

  before(async function () {
    emulator = await startEmulator();
    const seeder = createTestClient(emulator);
    try {
      await seedContainer(seeder, {
        database: "db",
        container: "items",
        items: [
          { id: "1", pk: "a" },
          { id: "2", pk: "b" },
        ],
      });
    } finally {
      seeder.dispose();
    }
  });

  after(async function () {
    await emulator?.close();
  });

  beforeEach(function () {
    delete process.env[metadataHedgingEnvironmentVariable];
    emulator.clearFaults();
    emulator.resetCounters();
  });

  afterEach(function () {
    for (const client of clients.splice(0)) client.dispose();
    if (savedSwitch === undefined) delete process.env[metadataHedgingEnvironmentVariable];
    else process.env[metadataHedgingEnvironmentVariable] = savedSwitch;
  });

  it("gets a cold client its container in about threshold + round trip while the preferred region stalls the Collection read", async function () {
    emulator.region("West US").addFault({ operations: ["collectionRead"], delayMs: slowMetadataMs });
    const { client } = coldClient();
    const { value: response, ms } = await timed(() => client.database("db").container("items").read());
    console.log(`      container.read() took ${ms.toFixed(0)} ms (threshold ${threshold} ms, preferred region stalls ${slowMetadataMs} ms)`);
    assert.equal(response.statusCode, 200);
    assert.equal(response.resource?.id, "items");
    assert.ok(ms >= threshold - 5, `${ms} ms is below the threshold: the hedge cannot have gone out that early`);
    assert.ok(ms < 1500, `${ms} ms: the hedge did not shortcut the ${slowMetadataMs} ms stall`);
    assert.equal(emulator.region("West US").count("collectionRead"), 1);
    assert.equal(emulator.region("East US").count("collectionRead"), 1);
    assert.equal(emulator.region("North Europe").count("collectionRead"), 0, "one hedge at most");
  });

  it("puts its diagnostics in response.headers of container.read()", async function () {
    emulator.region("West US").addFault({ operations: ["collectionRead"], delayMs: slowMetadataMs });
    const { client, seen } = coldClient();
    const response = await client.database("db").container("items").read();
    const diagnostics = getHedgeDiagnostics(response.headers);
    assert.ok(diagnostics !== undefined, "diagnostics are in response.headers");
    assert.equal(diagnostics.policy, "metadata");
    assert.equal(diagnostics.operation, "collectionRead");
    assert.equal(diagnostics.thresholdMs, threshold);
    assert.equal(diagnostics.primaryRegion, "West US");
    assert.equal(diagnostics.hedgeFired, true);
    assert.equal(diagnostics.hedgeWon, true);
    assert.equal(diagnostics.winningRegion, "East US");
    assert.equal(diagnostics.terminalState, "hedgeWon");
    assert.equal(diagnostics.winningActivityId, response.activityId);
    assert.match(diagnostics.winningActivityId ?? "", /^[0-9a-f-]{36}$/);
    assert.deepEqual(
      diagnostics.arms.map((arm) => [arm.region, arm.reason, arm.outcome]),
      [
        ["West US", "primary", "drained"],
        ["East US", "threshold", "returned"],
      ],
    );
    assert.ok(!JSON.stringify(diagnostics).toLowerCase().includes("type=master"), "no credential in the diagnostics");
    assert.deepEqual(
      seen.filter((entry) => entry.operation === "collectionRead"),
      [diagnostics],
    );
  });

  it("surfaces a fast primary 404 on the Collection read as 404, and nothing reaches another region", async function () {
    const { client } = coldClient();
    const error: unknown = await client
      .database("db")
      .container("missing")
      .read()
      .then(
        () => assert.fail("reading a container that does not exist succeeded"),
        (failure: unknown) => failure,
      );
    assert.equal((error as { code?: unknown }).code, 404);
    // Past the threshold: a hedge, had one been scheduled, would have gone out by now.
    await new Promise((resolve) => setTimeout(resolve, threshold + 100));
    assert.equal(emulator.region("West US").count("collectionRead"), 1);
    assert.equal(emulator.count("collectionRead"), 1, "no Collection read reached another region");
    const diagnostics = getHedgeDiagnostics(error);
    assert.ok(diagnostics !== undefined, "the error carries diagnostics");
    assert.equal(diagnostics.hedgeFired, false);
    assert.equal(diagnostics.terminalState, "primaryWon");
  });

  it("sends no metadata hedge while the environment kill switch is set, even with metadata hedging on", async function () {
    process.env[metadataHedgingEnvironmentVariable] = "false";
    const stallMs = 500;
    // Once each: the change feed reads the Collection again, and only its PartitionKeyRange read needs the stall.
    emulator.region("West US").addFault({ operations: ["collectionRead"], delayMs: stallMs, count: 1 });
    emulator.region("West US").addFault({ operations: ["partitionKeyRangeReadFeed"], delayMs: stallMs, count: 1 });
    const { client, seen } = coldClient({ metadata: true });
    const container = client.database("db").container("items");
    const { ms } = await timed(() => container.read());
    assert.ok(ms >= stallMs - 5, `${ms} ms: the read did not wait for the stalled primary`);
    const { value: items, ms: feedMs } = await timed(() => readChangeFeed(container));
    assert.equal(items, 2);
    assert.ok(feedMs >= stallMs - 5, `${feedMs} ms: the change feed did not wait for the stalled partition key ranges`);
    assert.equal(emulator.region("West US").count("partitionKeyRangeReadFeed"), 1, "the change feed read the partition key ranges");
    for (const region of ["East US", "North Europe"]) {
      assert.equal(emulator.region(region).count(["collectionRead", "partitionKeyRangeReadFeed"]), 0, `a metadata read reached ${region}`);
    }
    const metadata = seen.filter((entry) => entry.policy === "metadata");
    assert.ok(metadata.length >= 2);
    assert.ok(metadata.every((entry) => entry.skipReason === "disabled" && !entry.hedgeFired));
  });

  it("hedges the first page of the PartitionKeyRange read feed, and the other region wins it", async function () {
    emulator.region("West US").addFault({ operations: ["partitionKeyRangeReadFeed"], delayMs: slowMetadataMs });
    const { client, seen } = coldClient();
    const container = client.database("db").container("items");
    const { value: items, ms } = await timed(() => readChangeFeed(container));
    console.log(`      change feed read took ${ms.toFixed(0)} ms (preferred region stalls pkranges ${slowMetadataMs} ms)`);
    assert.equal(items, 2);
    assert.ok(ms < 1500, `${ms} ms: the hedge did not shortcut the ${slowMetadataMs} ms stall`);
    const pkRanges = seen.filter((entry) => entry.operation === "partitionKeyRangeReadFeed");
    assert.equal(pkRanges.length, 1);
    assert.equal(pkRanges[0]?.hedgeWon, true);
    assert.equal(pkRanges[0]?.winningRegion, "East US");
    assert.equal(emulator.region("East US").count("partitionKeyRangeReadFeed"), 1);
  });
});

import assert from "node:assert/strict";
import { ChangeFeedStartFrom } from "@azure/cosmos";
import type { Container, CosmosClient } from "@azure/cosmos";
import type { HedgingOptions } from "../../src/client/hedgingHttpClient.js";
import { metadataHedgingEnvironmentVariable } from "../../src/cosmos/environment.js";
import { getHedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import type { HedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import type { Emulator } from "../emulator/index.js";
import { useEmulator } from "../support/emulatorFixture.js";
import { assertSeen, settledRequests } from "../support/wire.js";

const preferredLocations = ["West US", "East US"];
const threshold = 300;
/** A stall this long loses every race; the stalled primary is cut, so no test waits for it. */
const slowMetadataMs = 10_000;

describe("metadataHedgingPolicy through the real CosmosClient", function () {
  const fixture = useEmulator({
    items: [
      { id: "1", pk: "a" },
      { id: "2", pk: "b" },
    ],
    preferredLocations,
  });
  let emulator: Emulator;
  const savedSwitch = process.env[metadataHedgingEnvironmentVariable];

  /** A cold client (nothing cached yet) whose metadata reads are hedged, recording every diagnostics record. */
  async function coldClient(hedging: HedgingOptions = { metadata: { threshold } }): Promise<{ client: CosmosClient; records: HedgeDiagnostics[] }> {
    const { client, diagnostics } = await fixture.client({ hedging });
    return { client, records: diagnostics };
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

  beforeEach(function () {
    emulator = fixture.emulator;
    delete process.env[metadataHedgingEnvironmentVariable];
  });

  afterEach(function () {
    if (savedSwitch === undefined) delete process.env[metadataHedgingEnvironmentVariable];
    else process.env[metadataHedgingEnvironmentVariable] = savedSwitch;
  });

  it("gets a cold client its container in about threshold + round trip while the preferred region stalls the Collection read", async function () {
    emulator.region("West US").addFault({ operations: ["collectionRead"], delayMs: slowMetadataMs });
    const { client } = await coldClient();
    const { value: response, ms } = await timed(() => client.database("db").container("items").read());
    console.log(`      container.read() took ${ms.toFixed(0)} ms (threshold ${threshold} ms, preferred region stalls ${slowMetadataMs} ms)`);
    assert.equal(response.statusCode, 200);
    assert.equal(response.resource?.id, "items");
    assert.ok(ms >= threshold - 5, `${ms} ms is below the threshold: the hedge cannot have gone out that early`);
    assert.ok(ms < slowMetadataMs / 2, `${ms} ms: the hedge did not shortcut the ${slowMetadataMs} ms stall`);
    // One hedge at most, and the stalled primary cut at the service once the hedge answered.
    assertSeen(await settledRequests(emulator, "collectionRead"), [
      { region: "West US", status: undefined, cutByClient: true },
      { region: "East US", status: 200, cutByClient: false },
    ]);
  });

  it("puts its diagnostics in response.headers of container.read()", async function () {
    emulator.region("West US").addFault({ operations: ["collectionRead"], delayMs: slowMetadataMs });
    const { client, records } = await coldClient();
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
      records.filter((entry) => entry.operation === "collectionRead"),
      [diagnostics],
    );
    // The "aborted" above is the policy's word for it; the service saw the primary's connection cut.
    assertSeen(await settledRequests(emulator, "collectionRead"), [
      { region: "West US", status: undefined, cutByClient: true },
      { region: "East US", status: 200, cutByClient: false },
    ]);
  });

  it("surfaces a fast primary 404 on the Collection read as 404, and nothing reaches another region", async function () {
    // A threshold far above the 404's latency, so that no hedge can be due before it, however loaded the machine.
    const patient = 1000;
    const { client } = await coldClient({ metadata: { threshold: patient } });
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
    await new Promise((resolve) => setTimeout(resolve, patient + 100));
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
    const { client, records } = await coldClient({ metadata: true });
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
    const metadata = records.filter((entry) => entry.policy === "metadata");
    assert.ok(metadata.length >= 2);
    assert.ok(metadata.every((entry) => entry.skipReason === "disabled" && !entry.hedgeFired));
  });

  it("hedges the first page of the PartitionKeyRange read feed, and the other region wins it", async function () {
    emulator.region("West US").addFault({ operations: ["partitionKeyRangeReadFeed"], delayMs: slowMetadataMs });
    const { client, records } = await coldClient();
    const container = client.database("db").container("items");
    const { value: items, ms } = await timed(() => readChangeFeed(container));
    console.log(`      change feed read took ${ms.toFixed(0)} ms (preferred region stalls pkranges ${slowMetadataMs} ms)`);
    assert.equal(items, 2);
    assert.ok(ms < slowMetadataMs / 2, `${ms} ms: the hedge did not shortcut the ${slowMetadataMs} ms stall`);
    const pkRanges = records.filter((entry) => entry.operation === "partitionKeyRangeReadFeed");
    assert.equal(pkRanges.length, 1);
    assert.equal(pkRanges[0]?.hedgeWon, true);
    assert.equal(pkRanges[0]?.winningRegion, "East US");
    assert.equal(emulator.region("East US").count("partitionKeyRangeReadFeed"), 1);
  });
});

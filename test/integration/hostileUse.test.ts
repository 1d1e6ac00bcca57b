import assert from "node:assert/strict";
import { CosmosClient } from "@azure/cosmos";
import type { CosmosClientOptions } from "@azure/cosmos";
import { withHedging } from "../../src/client/withHedging.js";
import type { HedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import { captureAzureLogs } from "../support/logCapture.js";
import { useEmulator } from "../support/emulatorFixture.js";
import { catchUnhandled } from "../support/unhandledRejections.js";
import { settledRequests } from "../support/wire.js";

const preferredLocations = ["West US", "East US", "North Europe"];
const item = { id: "item-1", pk: "pk-1", value: 1 };
const warmUp = { id: item.id, pk: item.pk };

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const field of Object.values(value)) deepFreeze(field);
  }
  return value;
}

/**
 * The package used the way a careless or hostile caller uses it, through the
 * real `@azure/cosmos` client: each test is a defect a review found, with
 * the outcome read from the emulator's record of requests where it can be.
 */
describe("hostile use through the real CosmosClient", function () {
  const fixture = useEmulator({ items: [item], preferredLocations });

  it("a caller that freezes the diagnostics records it is given (as an immutable store does) gets no unhandled rejection when a drained loser ends", async function () {
    const { emulator } = fixture;
    const kept: HedgeDiagnostics[] = [];
    const unhandled = catchUnhandled();
    try {
      const { container } = await fixture.client({
        hedging: { crossRegion: { threshold: 50, thresholdStep: 5_000 }, onDiagnostics: (record) => void kept.push(deepFreeze(record)) },
        warmUp,
      });
      emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: 400 });
      const response = await container.item(item.id, item.pk).read();
      assert.equal(response.statusCode, 200);
      // The slow primary is drained: it answers at the service, and its drain ends after the caller has its response.
      const reads = await settledRequests(emulator, "pointRead");
      assert.deepEqual(reads.map((read) => `${read.region} ${read.status} ${read.cutByClient}`).sort(), ["East US 200 false", "West US 200 false"]);
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.deepEqual(unhandled.seen, []);
      const raced = kept.filter((record) => record.operation === "pointRead").at(-1);
      assert.equal(raced?.arms[0]?.outcome, "drained", "the record the caller froze keeps what it said at the decision");
    } finally {
      unhandled.stop();
    }
  });

  it("an onDiagnostics that trims the record it is given (drops its arms) does not fail the read it describes, with verbose logging on", async function () {
    const { emulator } = fixture;
    const logs = captureAzureLogs("verbose");
    try {
      const { container } = await fixture.client({
        hedging: {
          crossRegion: { threshold: 50, thresholdStep: 5_000 },
          onDiagnostics: (record) => {
            // What a caller keeping only a summary does; the record is the caller's once it is handed over.
            delete (record as Partial<HedgeDiagnostics>).arms;
          },
        },
        warmUp,
      });
      emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: 400 });
      const response = await container.item(item.id, item.pk).read();
      assert.equal(response.statusCode, 200);
      assert.equal(response.resource?.id, item.id);
      const reads = await settledRequests(emulator, "pointRead");
      assert.deepEqual(reads.map((read) => `${read.region} ${read.status}`).sort(), ["East US 200", "West US 200"], "one read per region: the SDK did not retry");
      assert.ok(logs.lines.some((line) => line.includes("pointRead: hedged at")), "the race was logged, from the record as it was before the caller got it");
    } finally {
      logs.restore();
    }
  });
});

describe("hostile use: an excludedLocations list the hedging client cannot read, with routing of its own", function () {
  const fixture = useEmulator({ items: [item], preferredLocations });
  // The SDK takes both lists and excludes their region; ours refuse them (more than 256 entries; a blank entry), so the SDK's exclusions are unknown.
  const unreadable = {
    "301 entries": ["North Europe", ...Array.from({ length: 300 }, (_, i) => `Nowhere ${i}`)],
    "a blank entry": ["North Europe", " "],
  };

  for (const [label, excludedLocations] of Object.entries(unreadable)) {
    it(`with ${label}, a preferred order changed at runtime does not move the read into the region the SDK was told to avoid`, async function () {
      const { emulator } = fixture;
      const { container, hedging: client, diagnostics } = await fixture.client({ hedging: { crossRegion: { threshold: 50, thresholdStep: 5_000 } }, warmUp });
      client?.regions.setPreferredRegions(["North Europe", "West US", "East US"]);
      const { resource } = await container.item(item.id, item.pk).read({ excludedLocations });
      assert.equal(resource?.value, 1);
      const reads = await settledRequests(emulator, "pointRead");
      assert.deepEqual(reads.map((read) => read.region), ["West US"], "sent where the SDK sent it, as the warning says");
      assert.equal(diagnostics.at(-1)?.routing, undefined);
    });
  }

  it("with the client's excludedRegions naming the SDK's region, the read stays there rather than go to a region the unreadable list may name", async function () {
    const { emulator } = fixture;
    const { container, diagnostics } = await fixture.client({ hedging: { crossRegion: { threshold: 50, thresholdStep: 5_000 }, excludedRegions: ["West US"] }, warmUp });
    emulator.resetCounters();
    const { resource } = await container.item(item.id, item.pk).read({ excludedLocations: ["East US", " "] });
    assert.equal(resource?.value, 1);
    const reads = await settledRequests(emulator, "pointRead");
    assert.deepEqual(reads.map((read) => read.region), ["West US"]);
    assert.equal(diagnostics.at(-1)?.skipReason, "disabled");
  });

  it("without the request plugin (plugins replaced), a preferred order changed at runtime does not move the read either", async function () {
    const { emulator } = fixture;
    const hedged = withHedging(
      { endpoint: emulator.endpoint, key: emulator.key, connectionPolicy: { enableBackgroundEndpointRefreshing: false, preferredLocations } },
      { crossRegion: { threshold: 50, thresholdStep: 5_000 } },
    );
    const client = new CosmosClient({ ...hedged, plugins: undefined } as CosmosClientOptions);
    try {
      const container = client.database("db").container("items");
      await container.item(item.id, item.pk).read();
      emulator.resetCounters();
      hedged.httpClient.regions.setPreferredRegions(["North Europe", "West US", "East US"]);
      const { resource } = await container.item(item.id, item.pk).read({ excludedLocations: ["North Europe"] });
      assert.equal(resource?.value, 1);
      assert.deepEqual((await settledRequests(emulator, "pointRead")).map((read) => read.region), ["West US"]);
    } finally {
      client.dispose();
    }
  });
});

describe("hostile use on a multi-write account", function () {
  const fixture = useEmulator({ emulator: { multipleWriteLocations: true }, items: [item], preferredLocations });

  it("a client told not to use multiple write locations never hedges a write, even with enableMultiWriteRegionHedge", async function () {
    const { emulator } = fixture;
    const { container, diagnostics } = await fixture.client({
      // The SDK sends every write to one write region; a hedge to another would write the document in two.
      connectionPolicy: { useMultipleWriteLocations: false },
      hedging: { crossRegion: { threshold: 30, thresholdStep: 5_000, enableMultiWriteRegionHedge: true } },
      warmUp,
    });
    for (const region of emulator.regions) region.addFault({ operations: ["create"], delayMs: 300 });
    const response = await container.items.create({ id: "written-once", pk: item.pk });
    assert.equal(response.statusCode, 201);
    const creates = await settledRequests(emulator, "create");
    assert.equal(creates.length, 1, `the create went out once; the service saw ${creates.map((request) => request.region).join(", ")}`);
    const record = diagnostics.find((entry) => entry.operation === "create");
    assert.equal(record?.skipReason, "notEligible");
  });
});


import assert from "node:assert/strict";
import { CosmosClient, PluginOn } from "@azure/cosmos";
import type { Container, PluginConfig } from "@azure/cosmos";
import { withHedging } from "../../src/client/withHedging.js";
import { hedgingRequestOptions } from "../../src/client/requestOptions.js";
import { getHedgingDetection } from "../../src/diagnostics/detection.js";
import type { HedgingDetection } from "../../src/diagnostics/detection.js";
import { whenFinal } from "../../src/diagnostics/final.js";
import { getHedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";
import { collectHedgeDiagnostics } from "../../src/diagnostics/diagnosticsCollector.js";
import type { HedgingHttpClient } from "../../src/client/hedgingHttpClient.js";
import type { Emulator } from "../emulator/index.js";
import { useEmulator } from "../support/emulatorFixture.js";

const items = Array.from({ length: 6 }, (_, i) => ({ id: `item-${i}`, pk: `pk-${i % 3}`, value: i }));
/** Far beyond the emulator's latency (under 50 ms) and the threshold: only a hedge can answer before it. */
const slow = 10_000;
const threshold = 100;

function pairs(detection: HedgingDetection | undefined): string[][] {
  return (detection?.requestedRegions() ?? []).map(({ region, reason }) => [region, reason]);
}

describe("the hedging detection API through the real CosmosClient", function () {
  const fixture = useEmulator({ items, preferredLocations: ["West US", "East US", "North Europe"] });
  let emulator: Emulator;
  let container: Container;
  let hedging: HedgingHttpClient | undefined;

  beforeEach(async function () {
    emulator = fixture.emulator;
    ({ container, hedging } = await fixture.client({
      // A second hedge only after seconds: each race has the arms its test expects, however loaded the machine.
      hedging: { crossRegion: { threshold, thresholdStep: slow / 2 } },
      warmUp: { id: "item-0", pk: "pk-0" },
    }));
  });

  it("reports a hedged point read on its response: initial West US, hedging East US, and its true cost once the drained loser ends", async function () {
    // Slow enough that East US always answers first, short enough that the drained West US arm answers within its drain.
    emulator.region("West US").addFault({ operations: ["pointRead"], delayMs: 1500 });
    const response = await container.item("item-1", "pk-1").read();
    assert.equal(response.statusCode, 200);
    const detection = getHedgingDetection(response);
    assert.ok(detection, "the response carries the operation's record");
    assert.equal(detection, getHedgingDetection(response.headers), "and so do its headers");
    assert.equal(detection.hedgingStarted(), true);
    assert.deepEqual(pairs(detection), [
      ["West US", "initial"],
      ["East US", "hedging"],
    ]);
    assert.deepEqual(detection.respondedRegions(), ["East US"]);
    assert.equal(detection.requested("westus"), true, "region names compare without case or spaces");
    assert.equal(detection.responded("WEST US"), false);
    // The West US arm is still draining: the cost so far is East US's alone, and the record says so.
    assert.equal(detection.final, false);
    assert.equal(detection.requestCharge, 1);
    const record = getHedgeDiagnostics(response.headers);
    assert.equal(record?.final, false);
    assert.equal(record?.totalRequestCharge, 1);

    const settled = await detection.settled;
    assert.equal(settled, detection);
    assert.equal(detection.final, true);
    assert.deepEqual(detection.respondedRegions(), ["East US", "West US"], "the drained loser's reply, in arrival order");
    assert.equal(detection.requestCharge, 2, "both arms are billed");
    const finalRecord = await whenFinal(record!);
    assert.equal(finalRecord, record, "the live record, completed in place");
    assert.equal(finalRecord.final, true);
    assert.equal(finalRecord.totalRequestCharge, 2);
    assert.equal(finalRecord.arms[0]?.drainEnd, "settled");
    // metrics() counts the drained arm's charge, and its region's percentiles show what its arms really took:
    // after a second such read, two of West US's three latencies (the warm-up read's is the third) are the drained arms' 1500 ms.
    await whenFinal(getHedgeDiagnostics(await container.item("item-2", "pk-2").read())!);
    const metrics = hedging?.metrics();
    assert.equal(metrics?.losingRequestCharge, 2);
    const west = metrics?.regions.find((region) => region.region === "West US");
    assert.equal(west?.latency?.samples, 3);
    assert.ok((west?.latency?.p50 ?? 0) >= 1400, `West US p50 ${west?.latency?.p50} ms, where two of its three arms ran 1500 ms`);
  });

  it("gives each call its own snapshot: a later read of the same client does not change an earlier record", async function () {
    const first = getHedgingDetection(await container.item("item-1", "pk-1").read());
    const requested = first?.requestedRegions();
    await container.item("item-2", "pk-2").read();
    assert.deepEqual(pairs(first), [["West US", "initial"]]);
    assert.equal(first?.hedgingStarted(), false);
    assert.equal(first?.final, true);
    assert.ok(Object.isFrozen(requested) && Object.isFrozen(requested?.[0]));
    assert.notEqual(first?.requestedRegions(), requested, "a new array per call");
  });

  it("reports a paged query through collectHedgeDiagnostics: the query plan and every page sent to West US, each hedged to East US", async function () {
    emulator.region("West US").addFault({ operations: ["query", "queryPlan"], delayMs: slow });
    const { result, detection, diagnostics } = await collectHedgeDiagnostics(() => container.items.query("SELECT * FROM c", { maxItemCount: 2 }).fetchAll());
    assert.equal(result.resources.length, items.length);
    assert.equal(detection.hedgingStarted(), true);
    const requested = pairs(detection);
    const count = (region: string, reason: string): number => requested.filter((pair) => pair[0] === region && pair[1] === reason).length;
    // The query plan and each page: sent where the SDK sends them, to West US, and hedged to East US, which answered.
    const sent = diagnostics.length;
    assert.ok(sent >= 3, `the query plan and several pages (${sent})`);
    assert.equal(count("West US", "initial"), sent, JSON.stringify(requested));
    assert.equal(count("East US", "hedging"), sent, JSON.stringify(requested));
    assert.equal(requested.length, 2 * sent);
    assert.ok(detection.respondedRegions().every((region) => region === "East US"), "West US never answered within the test");
    assert.equal(detection.respondedRegions().length, sent);
    assert.equal(detection.requestCharge, detection.respondedRegions().length, "one request unit a reply on the emulator");
    assert.equal(diagnostics.filter((record) => record.hedgeWon).length, sent);
    assert.equal(detection.final, false, "the West US arms are still draining");
  });

  it("describes an operation the SDK retried in another region: a 503 in West US, not hedged, is initial West US then regionFailover East US", async function () {
    emulator.region("West US").addFault({ operations: ["pointRead"], status: 503 });
    const response = await container.item("item-2", "pk-2").read(hedgingRequestOptions({ hedging: false }));
    assert.equal(response.statusCode, 200);
    const detection = getHedgingDetection(response);
    assert.equal(detection?.hedgingStarted(), false);
    assert.deepEqual(pairs(detection), [
      ["West US", "initial"],
      ["East US", "regionFailover"],
    ]);
    assert.deepEqual(detection?.respondedRegions(), ["West US", "East US"]);
    assert.equal(detection?.requestCharge, 2, "the 503's charge and the answer's");
    assert.equal(detection?.final, true);
    assert.equal(emulator.region("East US").count("pointRead"), 1);
  });

  it("describes the same 503 when hedging is on as when it is off: the reply goes back to the SDK, whose failover answers it", async function () {
    emulator.region("West US").addFault({ operations: ["pointRead"], status: 503 });
    const response = await container.item("item-2", "pk-2").read(hedgingRequestOptions({ hedging: { threshold: slow } }));
    assert.equal(response.statusCode, 200);
    const detection = getHedgingDetection(response);
    assert.equal(detection?.hedgingStarted(), false);
    assert.deepEqual(pairs(detection), [
      ["West US", "initial"],
      ["East US", "regionFailover"],
    ]);
    assert.deepEqual(detection?.respondedRegions(), ["West US", "East US"]);
  });

  it("reports a same-region retry of the SDK's after a 429 as operationRetry", async function () {
    emulator.region("West US").addFault({ operations: ["pointRead"], status: 429, headers: { "x-ms-retry-after-ms": "10" }, count: 1 });
    const response = await container.item("item-3", "pk-0").read(hedgingRequestOptions({ hedging: false }));
    assert.equal(response.statusCode, 200);
    assert.deepEqual(pairs(getHedgingDetection(response)), [
      ["West US", "initial"],
      ["West US", "operationRetry"],
    ]);
  });

  it("reports an operation that failed on the error it threw", async function () {
    emulator.region("West US").addFault({ operations: ["pointRead"], status: 503 });
    emulator.region("East US").addFault({ operations: ["pointRead"], status: 503 });
    emulator.region("North Europe").addFault({ operations: ["pointRead"], status: 503 });
    const error: unknown = await container.item("item-4", "pk-1").read(hedgingRequestOptions({ hedging: false })).then(
      () => assert.fail("every region answers 503"),
      (thrown: unknown) => thrown,
    );
    assert.equal((error as { code?: unknown }).code, 503);
    const detection = getHedgingDetection(error);
    assert.ok(detection, "the error carries the operation's record");
    const requested = pairs(detection);
    assert.deepEqual(requested[0], ["West US", "initial"]);
    assert.ok(requested.slice(1).some(([, reason]) => reason === "regionFailover"), JSON.stringify(requested));
    assert.equal(detection.respondedRegions().length, requested.length, "every attempt got a reply");
    assert.equal(detection.hedgingStarted(), false);
  });

  it("reports a query that failed on the error it threw, though the SDK replaces a failed query's error headers", async function () {
    const syntax: unknown = await container.items.query("SELECT * FROM c WHERE", { partitionKey: "pk-1" }).fetchAll().then(
      () => assert.fail("the query does not parse"),
      (thrown: unknown) => thrown,
    );
    assert.equal((syntax as { code?: unknown }).code, 400);
    assert.deepEqual(pairs(getHedgingDetection(syntax)), [["West US", "initial"]]);
    for (const region of ["West US", "East US", "North Europe"]) emulator.region(region).addFault({ operations: ["query"], status: 500 });
    const failing: unknown = await container.items.query("SELECT * FROM c", { partitionKey: "pk-1" }).fetchNext().then(
      () => assert.fail("every region answers 500"),
      (thrown: unknown) => thrown,
    );
    assert.equal((failing as { code?: unknown }).code, 500);
    // @azure/cosmos 4.10.1 retries no 500: the page fails where the SDK sent it, as without hedging.
    assert.deepEqual(pairs(getHedgingDetection(failing)), [["West US", "initial"]]);
  });
});

describe("the hedging detection API with a request plugin of the user's", function () {
  const fixture = useEmulator({ items, preferredLocations: ["East US", "West US", "North Europe"] });

  it("keeps a query page's SDK retry in its record as regionFailover when the user's plugin passes a copy of the context along", async function () {
    const emulator = fixture.emulator;
    // @azure/cosmos 4.10.1 hands the plugins after an operation plugin its own context back; the page's record is found by that one.
    const copying: PluginConfig = { on: PluginOn.request, plugin: (context, _node, next) => next({ ...context }) };
    const client = new CosmosClient(
      withHedging({
        endpoint: emulator.endpoint,
        key: emulator.key,
        connectionPolicy: { enableBackgroundEndpointRefreshing: false, preferredLocations: ["East US", "West US", "North Europe"] },
        plugins: [copying],
      }),
    );
    try {
      const container = client.database(fixture.database).container(fixture.containerId);
      await container.item("item-0", "pk-0").read();
      emulator.region("East US").addFault({ operations: ["query"], status: 503, count: 1 });
      const { result, detection } = await collectHedgeDiagnostics(() =>
        container.items.query("SELECT * FROM c WHERE c.pk = 'pk-0'", hedgingRequestOptions({ hedging: false })).fetchAll(),
      );
      assert.equal(result.resources.length, 2);
      const requested = pairs(detection).map(([region, reason]) => `${region} ${reason}`);
      assert.ok(requested.some((entry) => entry.endsWith(" regionFailover")), JSON.stringify(requested));
    } finally {
      client.dispose();
    }
  });
});
